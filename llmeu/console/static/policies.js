// Policies: every key may read them; a role that may PUT them (admin,
// operator) edits one (the whole policy) or adds one. The gateway validates; its message is shown as is.

import { api } from "./api.js";
import { errorNote, facts, fill, h } from "./dom.js";
import { wideningField } from "./policy.js";

const CLASSES = ["on_premise", "eu_sovereign", "eu_resident", "global"];

export async function render(ctx, main) {
  const { data: policies, default_policy: defaultPolicy } = await api("v1/platform/policies");
  const own = policies.find((p) => p.policy_id === ctx.me.policy_id);
  const list = h(
    "ul",
    { className: "policy-cards" },
    policies.map((policy) => h("li", null, policyCard(ctx, policy, own, defaultPolicy))),
  );
  fill(
    main,
    h("h1", { tabIndex: -1 }, "Policies"),
    h(
      "p",
      { className: "lead" },
      `The default policy is ${defaultPolicy}. Your key's policy is ${ctx.me.policy_id}; a request may name it or any policy at least as strict.`,
    ),
    list,
    ctx.can("PUT", "/v1/platform/policies/{policy_id}") ? newPolicy() : null,
  );
}

function policyCard(ctx, policy, own, defaultPolicy) {
  const notes = [];
  if (policy.policy_id === defaultPolicy) notes.push("default");
  if (policy.policy_id === ctx.me.policy_id) notes.push("your key's");
  else if (own && wideningField(own, policy) === null) notes.push("usable by your key");
  const body = h("div", null, policyFacts(policy));
  const card = h(
    "article",
    { className: "card policy-card", "aria-labelledby": `policy-${policy.policy_id}` },
    h(
      "div",
      { className: "card-head" },
      h("h2", { id: `policy-${policy.policy_id}` }, policy.policy_id),
      h("span", { className: "chips" }, notes.map((n) => h("span", { className: "chip" }, n))),
    ),
    body,
  );
  if (ctx.can("PUT", "/v1/platform/policies/{policy_id}")) {
    const edit = h("button", { type: "button", className: "small", "aria-label": `Edit ${policy.policy_id}` }, "Edit");
    edit.addEventListener("click", () => {
      body.replaceChildren(
        policyForm(policy, {
          onSaved: (saved) => body.replaceChildren(policyFacts(saved), edit),
          onCancel: () => {
            body.replaceChildren(policyFacts(policy), edit);
            edit.focus();
          },
        }),
      );
      body.querySelector("input")?.focus();
    });
    body.append(edit);
  }
  return card;
}

function policyFacts(p) {
  const list = (items) => (items.length ? items.join(", ") : "any");
  return facts(
    [
      ["Classes", p.allow_classes.join(", ")],
      ["Countries", list(p.allow_countries)],
      ["Providers", list(p.allow_providers)],
      ["Longest provider retention", p.max_retention],
      ["Gateway stores content for", p.store_content],
      ["Fallback", p.fallback ? "yes" : "no"],
      ["If limits cannot be checked", p.limits_fail === "closed" ? "refuse limited calls" : "admit unchecked"],
      ["Provider jurisdictions", list(p.require_jurisdictions ?? [])],
      ["Required certifications", (p.require_certifications ?? []).join(", ") || "none"],
      ["Lowest SEAL level", p.min_seal === null || p.min_seal === undefined ? "any" : `SEAL-${p.min_seal}`],
      ["MCP tool servers", list(p.allow_mcp_servers ?? [])],
      ["MCP tools", list(p.allow_tools ?? [])],
      ["Call metadata kept for", p.keep_metadata ?? "the gateway's default (P6M)"],
      ["Personal data", personalDataSummary(p.personal_data)],
    ],
    "facts compact",
  );
}

/** What each detector's hit does, in a line: `block iban; mask email, phone`. */
function personalDataSummary(section) {
  if (!section) return "not scanned";
  const byAction = {};
  for (const [detector, action] of Object.entries(section.detectors ?? {})) {
    (byAction[action] ??= []).push(detector);
  }
  const actions = Object.entries(byAction).map(([action, detectors]) => `${action} ${detectors.join(", ")}`);
  const restrict = Object.entries(section.restrict ?? {})
    .filter(([, values]) => values.length)
    .map(([field, values]) => `${field.replace("allow_", "")} ${values.join(", ")}`);
  return [
    actions.join("; ") || "no detectors",
    restrict.length ? `restrict to ${restrict.join(", ")}` : null,
    `unscanned parts: ${section.unscanned}`,
    `detector errors fail ${section.on_error}`,
  ]
    .filter(Boolean)
    .join("; ");
}

let formCount = 0;

/** The form of one policy; `policy` null means a new one (its id is asked for). */
function policyForm(policy, { onSaved, onCancel }) {
  formCount += 1;
  const id = (name) => `pf-${formCount}-${name}`;
  const isNew = policy === null;
  const p = policy ?? {
    policy_id: "",
    allow_classes: ["on_premise", "eu_sovereign"],
    allow_countries: [],
    allow_providers: [],
    max_retention: "P0D",
    store_content: "P0D",
    fallback: true,
    limits_fail: "open",
  };
  const text = (name, label, value, hint, extra = {}) =>
    h(
      "div",
      { className: "field" },
      h("label", { htmlFor: id(name) }, label),
      h("input", { id: id(name), name, value, "aria-describedby": hint ? id(`${name}-hint`) : null, ...extra }),
      hint ? h("p", { className: "hint", id: id(`${name}-hint`) }, hint) : null,
    );
  const note = h("div", { "aria-live": "polite" });
  const form = h(
    "form",
    { className: "policy-form", method: "post", "aria-label": isNew ? "New policy" : `Edit policy ${p.policy_id}` },
    isNew ? text("policy_id", "Policy id", "", "Letters, digits, - and _.", { required: true, pattern: "[A-Za-z0-9_.\\-]+" }) : null,
    h(
      "fieldset",
      null,
      h("legend", null, "Allowed sovereignty classes"),
      CLASSES.map((cls) =>
        h(
          "label",
          { className: "check" },
          h("input", { type: "checkbox", name: "allow_classes", value: cls, checked: p.allow_classes.includes(cls) }),
          ` ${cls}`,
        ),
      ),
    ),
    text("allow_countries", "Allowed countries", p.allow_countries.join(", "), "ISO codes, comma separated; empty means any."),
    text("allow_providers", "Allowed providers", p.allow_providers.join(", "), "Comma separated; empty means any."),
    text("max_retention", "Longest provider retention", p.max_retention, "ISO-8601 duration, e.g. P0D, P30D, PT12H.", { required: true }),
    text("store_content", "Gateway stores content for", p.store_content, "P0D stores no prompts or answers.", { required: true }),
    h("label", { className: "check" }, h("input", { type: "checkbox", name: "fallback", checked: p.fallback }), " Fall back to the next admitted endpoint on failure"),
    limitsFailField(id("limits_fail"), p.limits_fail ?? "open"),
    text("require_jurisdictions", "Provider jurisdictions", (p.require_jurisdictions ?? []).join(", "), "Countries whose law may reach the provider; EU for the member states; empty means any."),
    text("require_certifications", "Required certifications", (p.require_certifications ?? []).join(", "), "e.g. secnumcloud, bsi-c5; every one listed must be held."),
    text("min_seal", "Lowest SEAL level", p.min_seal ?? "", "0 to 4; empty means any.", { inputmode: "numeric", pattern: "[0-4]?" }),
    text("allow_mcp_servers", "Allowed MCP tool servers", (p.allow_mcp_servers ?? []).join(", "), "Server ids or patterns (* any characters, ? one), comma separated; empty means any the rules above admit."),
    text("allow_tools", "Allowed MCP tools", (p.allow_tools ?? []).join(", "), "Tools as /mcp names them (server__tool) or patterns such as crm__*; empty means any."),
    text("keep_metadata", "Keep call metadata for", p.keep_metadata ?? "", "ISO-8601 duration; empty means the gateway's default (P6M)."),
    h(
      "div",
      { className: "field" },
      h("label", { htmlFor: id("personal_data") }, "Personal data"),
      h("textarea", { id: id("personal_data"), name: "personal_data", rows: 6, spellcheck: false, "aria-describedby": id("personal_data-hint") },
        p.personal_data ? JSON.stringify(p.personal_data, null, 2) : ""),
      h("p", { className: "hint", id: id("personal_data-hint") },
        'The personal_data section as JSON, e.g. {"detectors": {"iban": "block", "email": "mask"}}; empty means prompts are not scanned.'),
    ),
    h(
      "div",
      { className: "actions" },
      h("button", { type: "submit", className: "primary" }, isNew ? "Create policy" : "Save"),
      onCancel ? h("button", { type: "button", onclick: onCancel }, "Cancel") : null,
    ),
    note,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const split = (name) => String(data.get(name) ?? "").split(",").map((v) => v.trim()).filter(Boolean);
    const policyId = isNew ? String(data.get("policy_id")).trim() : p.policy_id;
    const seal = String(data.get("min_seal") ?? "").trim();
    const keep = String(data.get("keep_metadata") ?? "").trim();
    const personal = String(data.get("personal_data") ?? "").trim();
    let personalData = null;
    try {
      personalData = personal === "" ? null : JSON.parse(personal);
    } catch {
      note.replaceChildren(errorNote({ message: "Personal data: not valid JSON." }));
      return;
    }
    // Fields this form does not show stay as they were: the body starts from the policy read.
    const body = {
      ...(isNew ? {} : p),
      policy_id: policyId,
      allow_classes: data.getAll("allow_classes"),
      allow_countries: split("allow_countries").map((c) => c.toUpperCase()),
      allow_providers: split("allow_providers"),
      max_retention: String(data.get("max_retention")).trim(),
      store_content: String(data.get("store_content")).trim(),
      fallback: data.get("fallback") !== null,
      limits_fail: String(data.get("limits_fail")),
      require_jurisdictions: split("require_jurisdictions").map((c) => c.toUpperCase()),
      require_certifications: split("require_certifications").map((c) => c.toLowerCase()),
      min_seal: seal === "" ? null : Number(seal),
      allow_mcp_servers: split("allow_mcp_servers"),
      allow_tools: split("allow_tools"),
      keep_metadata: keep === "" ? null : keep,
      personal_data: personalData,
    };
    try {
      const saved = await api(`v1/platform/policies/${encodeURIComponent(policyId)}`, { method: "PUT", body });
      note.replaceChildren(h("p", { className: "ok", role: "status" }, `Saved ${saved.policy_id}.`));
      onSaved(saved);
    } catch (error) {
      note.replaceChildren(errorNote(error));
    }
  });
  return form;
}

/** What a key's limited calls get while the limits store (Redis) does not answer. */
function limitsFailField(id, value) {
  const select = h(
    "select",
    { id, name: "limits_fail", "aria-describedby": `${id}-hint` },
    h("option", { value: "open" }, "Admit them unchecked"),
    h("option", { value: "closed" }, "Refuse them (503)"),
  );
  select.value = value;
  return h(
    "div",
    { className: "field" },
    h("label", { htmlFor: id }, "Limited calls when limits cannot be checked"),
    select,
    h("p", { className: "hint", id: `${id}-hint` }, "While Redis does not answer. Refusing never overspends a budget."),
  );
}

function newPolicy() {
  const holder = h("div");
  const reset = () =>
    holder.replaceChildren(
      policyForm(null, {
        onSaved: () => window.dispatchEvent(new HashChangeEvent("hashchange")),
      }),
    );
  reset();
  return h("section", { className: "card", "aria-labelledby": "new-policy" }, h("h2", { id: "new-policy" }, "New policy"), holder);
}
