// API keys: list those the role reaches (every key, or a team admin's team's);
// where the role may, create one (its secret is shown once, here, and never
// again: only its hash is stored) of a role it may grant, and revoke one.

import { api } from "./api.js";
import { dataTable, DASH, errorNote, fill, fmtEur, fmtNumber, fmtTime, h } from "./dom.js";

export async function render(ctx, main) {
  const list = h("div", { id: "key-list" });
  const secret = h("div", { "aria-live": "polite" });
  const teamOnly = ctx.can("GET", "/v1/platform/keys") === "team";
  const teams =
    ctx.can("POST", "/v1/platform/keys") === "all" && ctx.can("GET", "/v1/platform/teams")
      ? (await api("v1/platform/teams")).data
      : [];

  async function refresh() {
    const { data } = await api("v1/platform/keys");
    list.replaceChildren(keyTable(ctx, data, refresh));
  }

  fill(
    main,
    h("h1", { tabIndex: -1 }, "Keys"),
    teamOnly ? h("p", { className: "lead" }, `The keys of your team, ${ctx.me.team_id ?? "(none)"}.`) : null,
    ctx.can("POST", "/v1/platform/keys") ? createForm(ctx, teams, secret, refresh) : null,
    secret,
    h("section", { "aria-labelledby": "keys-title" }, h("h2", { id: "keys-title" }, teamOnly ? "Your team's keys" : "All keys"), list),
  );
  await refresh();
}

function createForm(ctx, teams, secret, refresh) {
  const field = (id, label, control, hint) =>
    h("div", { className: "field" }, h("label", { htmlFor: id }, label), control, hint ? h("p", { className: "hint" }, hint) : null);
  const policy = h(
    "select",
    { id: "key-policy", name: "policy_id" },
    ctx.policies.map((p) => h("option", { value: p.policy_id }, p.policy_id)),
  );
  policy.value = ctx.defaultPolicy;
  const role = h(
    "select",
    { id: "key-role", name: "role" },
    ctx.me.grants.map((r) => h("option", { value: r }, r)),
  );
  role.value = "member";
  const team = teams.length
    ? h("select", { id: "key-team", name: "team_id" }, h("option", { value: "" }, "none"), teams.map((t) => h("option", { value: t.id }, t.name)))
    : null;
  const note = h("div", { "aria-live": "polite" });
  const form = h(
    "form",
    { className: "card key-form", method: "post", "aria-labelledby": "key-form-title" },
    h("h2", { id: "key-form-title" }, "New key"),
    h(
      "div",
      { className: "filters" },
      field("key-name", "Name", h("input", { id: "key-name", name: "name", maxLength: 200, autocomplete: "off" })),
      field("key-policy", "Policy", policy),
      field("key-role", "Role", role, "Only roles that reach no further than yours."),
      team ? field("key-team", "Team", team) : null,
      field("key-budget", "Budget (EUR)", h("input", { id: "key-budget", name: "budget_eur", type: "number", min: 0, step: "any" }), "Empty: no budget."),
      field("key-rpm", "Requests per minute", h("input", { id: "key-rpm", name: "rpm_limit", type: "number", min: 1, step: 1 })),
      field("key-tpm", "Tokens per minute", h("input", { id: "key-tpm", name: "tpm_limit", type: "number", min: 1, step: 1 })),
    ),
    h("div", { className: "actions" }, h("button", { type: "submit", className: "primary" }, "Create key")),
    note,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const number = (name) => (data.get(name) === "" ? null : Number(data.get(name)));
    const body = {
      name: String(data.get("name")),
      policy_id: String(data.get("policy_id")),
      budget_eur: number("budget_eur"),
      rpm_limit: number("rpm_limit"),
      tpm_limit: number("tpm_limit"),
      role: String(data.get("role")),
    };
    if (data.get("team_id")) body.team_id = String(data.get("team_id"));
    note.replaceChildren();
    try {
      const key = await api("v1/platform/keys", { method: "POST", body });
      form.reset();
      policy.value = ctx.defaultPolicy;
      role.value = "member";
      showSecret(secret, key);
      await refresh();
    } catch (error) {
      note.replaceChildren(errorNote(error));
    }
  });
  return form;
}

function showSecret(holder, key) {
  const value = h("input", { id: "new-key-secret", readOnly: true, value: key.key, className: "secret", "aria-describedby": "new-key-warning" });
  const copy = h("button", { type: "button" }, "Copy");
  copy.addEventListener("click", async () => {
    value.select();
    try {
      await navigator.clipboard.writeText(key.key);
      copy.textContent = "Copied";
    } catch {
      copy.textContent = "Select and copy by hand";
    }
  });
  const done = h("button", { type: "button" }, "I have stored it");
  const panel = h(
    "section",
    { className: "card secret-card", role: "region", "aria-labelledby": "new-key-title" },
    h("h2", { id: "new-key-title", tabIndex: -1 }, `Key ${key.id} created`),
    h("p", { id: "new-key-warning", className: "warning" }, "This secret is shown once. Store it now: the gateway keeps only its hash."),
    h("label", { htmlFor: "new-key-secret" }, "Secret"),
    h("div", { className: "secret-row" }, value, copy),
    h("div", { className: "actions" }, done),
  );
  done.addEventListener("click", () => holder.replaceChildren());
  holder.replaceChildren(panel);
  panel.querySelector("h2").focus();
}

function keyTable(ctx, keys, refresh) {
  const mayRevoke = (k) => ctx.can("DELETE", "/v1/platform/keys/{key_id}") && ctx.grants(k.role) && !k.admin && !k.revoked_at;
  return dataTable(
    [
      ["Name", (k) => k.name || DASH],
      ["Id", (k) => h("code", null, k.id)],
      ["Policy", (k) => k.policy_id],
      ["Role", (k) => k.role],
      ["Team", (k) => k.team_id ?? DASH, "wide-only"],
      ["Budget", (k) => (k.budget_eur == null ? DASH : fmtEur(k.budget_eur)), "num wide-only"],
      ["RPM / TPM", (k) => `${fmtNumber(k.rpm_limit)} / ${fmtNumber(k.tpm_limit)}`, "num wide-only"],
      ["Created", (k) => fmtTime(k.created_at, false), "wide-only"],
      ["State", (k) => (k.revoked_at ? `revoked ${fmtTime(k.revoked_at, false)}` : "active")],
      ["", (k) => (mayRevoke(k) ? revokeButton(k, refresh) : null)],
    ],
    keys,
    { caption: "API keys" },
  );
}

function revokeButton(key, refresh) {
  const button = h("button", { type: "button", className: "small danger", "aria-label": `Revoke ${key.name || key.id}` }, "Revoke");
  button.addEventListener("click", async () => {
    if (!window.confirm(`Revoke ${key.name || key.id}? Calls with it are refused from now on.`)) return;
    try {
      await api(`v1/platform/keys/${encodeURIComponent(key.id)}`, { method: "DELETE" });
      await refresh();
    } catch (error) {
      button.replaceWith(errorNote(error));
    }
  });
  return button;
}
