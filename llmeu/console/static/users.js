// Users: the organisation's directory as the gateway knows it — provisioned by
// SCIM or signed in once — with each user's groups, the roles those groups
// give, the role an admin granted, their team and their personal keys. A role
// that may grant roles (admin, operator) grants or takes one back here, among
// the roles it may grant (ctx.me.grants, the same rule as for keys); a user
// whose granted role reaches further than the caller's shows it, unchangeable.
// The gateway checks every grant; its refusal is shown above the list.

import { api } from "./api.js";
import { dataTable, DASH, errorNote, fill, h } from "./dom.js";

const GRANT = "/v1/platform/users/{user_id}/role";
const NONE = "";

export async function render(ctx, main) {
  const list = h("div", { id: "user-list" });
  const note = h("div", { id: "user-note", "aria-live": "polite" });

  async function refresh() {
    const { data } = await api("v1/platform/users");
    list.replaceChildren(userTable(ctx, data, note, refresh));
  }

  fill(
    main,
    h("h1", { tabIndex: -1 }, "Users"),
    h(
      "p",
      { className: "lead" },
      "Everyone the directory knows: provisioned by SCIM or signed in with the organisation. ",
      "A user acts in the roles their groups give, and in the one granted here, from their next request.",
    ),
    note,
    h("section", { "aria-labelledby": "users-title" }, h("h2", { id: "users-title" }, "All users"), list),
  );
  await refresh();
}

function userTable(ctx, users, note, refresh) {
  const mayGrant = Boolean(ctx.can("PUT", GRANT));
  const columns = [
    ["User", (u) => u.user_name],
    ["Name", (u) => u.display_name || DASH],
    ["Active", (u) => h("span", { className: `badge ${u.active ? "user-active" : "user-inactive"}` }, u.active ? "active" : "inactive")],
    ["From", (u) => (u.provisioned ? "SCIM" : "sign-in")],
    ["Groups", (u) => list(u.groups)],
    ["Roles from groups", (u) => list(u.group_roles)],
    ["Granted role", (u) => (mayGrant && grantable(ctx, u) ? grantControl(ctx, u, note, refresh) : u.role ?? DASH)],
    ["Team", (u) => team(ctx, u)],
    ["Personal keys", (u) => String(u.personal_keys ?? 0), "num"],
  ];
  return dataTable(columns, users, { caption: "The directory's users", empty: "No users yet: SCIM provisions them, or they sign in." });
}

function list(items) {
  return items?.length ? items.join(", ") : DASH;
}

function team(ctx, user) {
  if (!user.team_id) return DASH;
  const name = user.team_name ?? user.team_id;
  return ctx.can("GET", "/v1/platform/teams/{team_id}") ? h("a", { href: `#/teams/${encodeURIComponent(user.team_id)}` }, name) : name;
}

/** Whether the caller may change this user's grant: it may take back the role held now. */
function grantable(ctx, user) {
  return user.role === null || ctx.me.grants.includes(user.role);
}

function grantControl(ctx, user, note, refresh) {
  const select = h(
    "select",
    { name: "role", className: "user-role", "aria-label": `Role granted to ${user.user_name}` },
    h("option", { value: NONE }, "none"),
    ctx.me.grants.map((role) => h("option", { value: role }, role)),
  );
  select.value = user.role ?? NONE;
  const save = h("button", { type: "submit", "aria-label": `Save the role of ${user.user_name}` }, "Save");
  const form = h("form", { className: "grant-form", method: "post", "aria-label": `Grant a role to ${user.user_name}` }, select, save);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    note.replaceChildren();
    const role = select.value === NONE ? null : select.value;
    try {
      await api(`v1/platform/users/${encodeURIComponent(user.id)}/role`, { method: "PUT", body: { role } });
    } catch (error) {
      note.replaceChildren(errorNote(error));
      select.value = user.role ?? NONE;
      return;
    }
    note.replaceChildren(h("p", { className: "ok", role: "status" }, role ? `${user.user_name} is granted ${role}.` : `${user.user_name} holds no granted role now.`));
    await refresh();
  });
  return form;
}
