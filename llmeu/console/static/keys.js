// API keys (admin only): create one (its secret is shown once, here, and
// never again: only its hash is stored), list them, revoke one.

import { api } from "./api.js";
import { dataTable, DASH, errorNote, fill, fmtEur, fmtNumber, fmtTime, h } from "./dom.js";

export async function render(ctx, main) {
  if (!ctx.isAdmin) {
    main.replaceChildren(h("h1", { tabIndex: -1 }, "Keys"), h("p", null, "Only the admin key manages keys."));
    return;
  }
  const list = h("div", { id: "key-list" });
  const secret = h("div", { "aria-live": "polite" });

  async function refresh() {
    const { data } = await api("v1/platform/keys");
    list.replaceChildren(keyTable(data, refresh));
  }

  fill(
    main,
    h("h1", { tabIndex: -1 }, "Keys"),
    createForm(ctx, secret, refresh),
    secret,
    h("section", { "aria-labelledby": "keys-title" }, h("h2", { id: "keys-title" }, "All keys"), list),
  );
  await refresh();
}

function createForm(ctx, secret, refresh) {
  const field = (id, label, control, hint) =>
    h("div", { className: "field" }, h("label", { htmlFor: id }, label), control, hint ? h("p", { className: "hint" }, hint) : null);
  const policy = h(
    "select",
    { id: "key-policy", name: "policy_id" },
    ctx.policies.map((p) => h("option", { value: p.policy_id }, p.policy_id)),
  );
  policy.value = ctx.defaultPolicy;
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
    };
    note.replaceChildren();
    try {
      const key = await api("v1/platform/keys", { method: "POST", body });
      form.reset();
      policy.value = ctx.defaultPolicy;
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

function keyTable(keys, refresh) {
  return dataTable(
    [
      ["Name", (k) => k.name || DASH],
      ["Id", (k) => h("code", null, k.id)],
      ["Policy", (k) => k.policy_id],
      ["Role", (k) => (k.admin ? "admin" : "tenant")],
      ["Budget", (k) => (k.budget_eur == null ? DASH : fmtEur(k.budget_eur)), "num wide-only"],
      ["RPM / TPM", (k) => `${fmtNumber(k.rpm_limit)} / ${fmtNumber(k.tpm_limit)}`, "num wide-only"],
      ["Created", (k) => fmtTime(k.created_at, false), "wide-only"],
      ["State", (k) => (k.revoked_at ? `revoked ${fmtTime(k.revoked_at, false)}` : "active")],
      ["", (k) => (k.admin || k.revoked_at ? null : revokeButton(k, refresh))],
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
