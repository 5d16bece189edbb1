// Teams: each team's policy, monthly budget, members and keys. Every role that
// may read teams sees them (a team admin: its own team only); a role that may
// create, change or delete a team (admin, operator) does it here. The gateway
// checks every change; its refusal is shown where the change was asked for.

import { api } from "./api.js";
import { dataTable, DASH, errorNote, facts, fill, fmtEur, fmtTime, h } from "./dom.js";

const TEAMS = "/v1/platform/teams";
const TEAM = "/v1/platform/teams/{team_id}";

export async function render(ctx, main, { id }) {
  if (id) {
    await renderTeam(ctx, main, id);
    return;
  }
  const { data } = await api("v1/platform/teams");
  const note = h("div", { "aria-live": "polite" });
  const create = ctx.can("POST", TEAMS)
    ? teamForm(ctx, null, note, async (body) => {
        const made = await api("v1/platform/teams", { method: "POST", body });
        location.hash = `#/teams/${encodeURIComponent(made.id)}`;
      })
    : null;
  fill(
    main,
    h("h1", { tabIndex: -1 }, "Teams"),
    create,
    note,
    h(
      "section",
      { "aria-labelledby": "teams-title" },
      h("h2", { id: "teams-title" }, ctx.can("GET", TEAMS) === "team" ? "Your team" : "All teams"),
      teamTable(data),
    ),
  );
}

function teamTable(teams) {
  return dataTable(
    [
      ["Name", (t) => h("a", { href: `#/teams/${encodeURIComponent(t.id)}` }, t.name)],
      ["Id", (t) => h("code", null, t.id), "wide-only"],
      ["Policy", (t) => t.policy_id],
      ["Budget / month", (t) => (t.budget_eur_month == null ? DASH : fmtEur(t.budget_eur_month)), "num"],
      ["Members", (t) => String(t.members.length), "num"],
      ["Keys", (t) => String(t.keys.length), "num"],
    ],
    teams,
    { caption: "Teams", empty: "No teams yet." },
  );
}

async function renderTeam(ctx, main, id) {
  const team = await api(`v1/platform/teams/${encodeURIComponent(id)}`);
  const keys = ctx.can("GET", "/v1/platform/keys")
    ? (await api("v1/platform/keys")).data.filter((k) => k.team_id === team.id && !k.revoked_at)
    : team.keys.map((keyId) => ({ id: keyId, name: "", role: DASH, policy_id: DASH }));
  const note = h("div", { "aria-live": "polite" });
  const body = h("div", null, teamFacts(team));
  const actions = h("div", { className: "actions" });
  if (ctx.can("PATCH", TEAM)) {
    const edit = h("button", { type: "button", id: "team-edit" }, "Edit");
    edit.addEventListener("click", () => {
      body.replaceChildren(
        teamForm(ctx, team, note, async (change) => {
          await api(`v1/platform/teams/${encodeURIComponent(team.id)}`, { method: "PATCH", body: change });
          window.dispatchEvent(new HashChangeEvent("hashchange"));
        }),
      );
      body.querySelector("input")?.focus();
    });
    actions.append(edit);
  }
  if (ctx.can("DELETE", TEAM)) {
    const remove = h("button", { type: "button", className: "danger", id: "team-delete" }, "Delete team");
    remove.addEventListener("click", async () => {
      if (!window.confirm(`Delete the team ${team.name}? Only a team without active keys can be deleted.`)) return;
      note.replaceChildren();
      try {
        await api(`v1/platform/teams/${encodeURIComponent(team.id)}`, { method: "DELETE" });
        location.hash = "#/teams";
      } catch (error) {
        note.replaceChildren(errorNote(error));
      }
    });
    actions.append(remove);
  }
  fill(
    main,
    h("p", null, h("a", { href: "#/teams" }, "← Teams")),
    h("h1", { tabIndex: -1 }, `Team ${team.name}`),
    h("section", { className: "card", "aria-label": "The team" }, body, actions, note),
    h(
      "section",
      { "aria-labelledby": "team-members-title" },
      h("h2", { id: "team-members-title" }, "Members"),
      team.members.length
        ? h("ul", { className: "members", id: "team-members" }, team.members.map((m) => h("li", null, m)))
        : h("p", { className: "empty" }, "No members."),
    ),
    h(
      "section",
      { "aria-labelledby": "team-keys-title" },
      h("h2", { id: "team-keys-title" }, "Active keys"),
      dataTable(
        [
          ["Name", (k) => k.name || DASH],
          ["Id", (k) => h("code", null, k.id)],
          ["Role", (k) => k.role],
          ["Policy", (k) => k.policy_id],
        ],
        keys,
        { caption: "The team's active keys", empty: "No active keys in this team." },
      ),
      ctx.can("POST", "/v1/platform/keys") ? h("p", null, h("a", { href: "#/keys" }, "Create or revoke keys on the Keys page")) : null,
    ),
  );
}

function teamFacts(team) {
  return facts([
    ["Id", h("code", null, team.id)],
    ["Policy", team.policy_id],
    ["Budget per month", team.budget_eur_month == null ? "none" : fmtEur(team.budget_eur_month)],
    ["Created", fmtTime(team.created_at, false)],
    ["Changed", team.updated_at ? fmtTime(team.updated_at, false) : null],
  ]);
}

/** The form to create a team (`team` null) or change one; `save(body)` sends it. */
function teamForm(ctx, team, note, save) {
  const prefix = team ? "team-edit" : "team-new";
  const field = (name, label, control, hint) =>
    h(
      "div",
      { className: "field" },
      h("label", { htmlFor: `${prefix}-${name}` }, label),
      control,
      hint ? h("p", { className: "hint" }, hint) : null,
    );
  const name = h("input", { id: `${prefix}-name`, name: "name", required: true, maxLength: 200, autocomplete: "off", value: team?.name ?? "" });
  const policy = h(
    "select",
    { id: `${prefix}-policy`, name: "policy_id" },
    ctx.policies.map((p) => h("option", { value: p.policy_id }, p.policy_id)),
  );
  policy.value = team?.policy_id ?? ctx.defaultPolicy;
  const budget = h("input", {
    id: `${prefix}-budget`,
    name: "budget_eur_month",
    type: "number",
    min: 0,
    step: "any",
    value: team?.budget_eur_month ?? "",
  });
  const members = h("textarea", { id: `${prefix}-members`, name: "members", rows: 3, value: (team?.members ?? []).join("\n") });
  const form = h(
    "form",
    { className: team ? "team-form" : "card team-form", method: "post", "aria-label": team ? `Change ${team.name}` : "New team" },
    team ? null : h("h2", null, "New team"),
    h(
      "div",
      { className: "filters" },
      field("name", "Name", name),
      field("policy", "Policy", policy, "Its keys' policies must be at least as strict."),
      field("budget", "Budget per month (EUR)", budget, "Empty: no budget."),
      field("members", "Members", members, "One per line: the subjects or e-mail addresses the issuer names."),
    ),
    h("div", { className: "actions" }, h("button", { type: "submit", className: "primary" }, team ? "Save team" : "Create team")),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    note.replaceChildren();
    const body = {
      name: name.value.trim(),
      policy_id: policy.value,
      budget_eur_month: budget.value === "" ? null : Number(budget.value),
      members: members.value
        .split("\n")
        .map((m) => m.trim())
        .filter(Boolean),
    };
    try {
      await save(body);
    } catch (error) {
      note.replaceChildren(errorNote(error));
    }
  });
  return form;
}
