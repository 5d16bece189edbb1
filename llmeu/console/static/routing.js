// The routing map: every endpoint of the catalog by sovereignty class, with
// its country, health and configuration, and which policies admit it; for a
// role that may (admin, operator), a button that reads the configuration again.

import { api } from "./api.js";
import { DASH, errorNote, fill, fmtNumber, h } from "./dom.js";

const CLASSES = [
  ["on_premise", "On premise", "Infrastructure the operator runs."],
  ["eu_sovereign", "EU sovereign", "EU-headquartered provider on EU infrastructure."],
  ["eu_resident", "EU resident", "EU region, provider controlled from outside the EU."],
  ["global", "Global", "Anywhere."],
];
const HEALTH = {
  closed: ["healthy", "ok"],
  half_open: ["probing after failures", "warn"],
  open: ["failing (circuit open)", "bad"],
};

export async function render(ctx, main) {
  const endpoints = (await api("v1/platform/endpoints")).data;
  const policyIds = ctx.policies.map((p) => p.policy_id);
  fill(
    main,
    h("h1", { tabIndex: -1 }, "Routing map"),
    h(
      "p",
      { className: "lead" },
      `${endpoints.length} endpoints in the catalog; ${endpoints.filter((e) => e.configured).length} configured. `,
      `Your key's policy is ${ctx.me.policy_id}.`,
    ),
    ctx.can("POST", "/v1/platform/reload") ? reloadButton() : null,
    ...CLASSES.map(([cls, title, about]) => classSection(cls, title, about, endpoints.filter((e) => e.sovereignty_class === cls))),
    matrix(endpoints, policyIds, ctx.me.policy_id),
  );
}

function reloadButton() {
  const note = h("span", { className: "hint", role: "status", "aria-live": "polite" });
  const button = h("button", { type: "button", id: "reload-config" }, "Reload configuration");
  button.addEventListener("click", async () => {
    button.disabled = true;
    note.replaceChildren();
    try {
      await api("v1/platform/reload", { method: "POST" });
      note.textContent = "Configuration read again in every gateway process.";
    } catch (error) {
      note.replaceChildren(errorNote(error));
    }
    button.disabled = false;
  });
  return h("div", { className: "actions" }, button, note);
}

function classSection(cls, title, about, endpoints) {
  if (!endpoints.length) return null;
  return h(
    "section",
    { className: `class-section class-${cls}`, "aria-labelledby": `map-${cls}` },
    h("h2", { id: `map-${cls}` }, h("span", { className: `badge class-${cls}` }, cls), ` ${title}`),
    h("p", { className: "hint" }, about),
    h("ul", { className: "endpoint-cards" }, endpoints.map(endpointCard)),
  );
}

function endpointCard(e) {
  const [healthText, healthClass] = HEALTH[e.health?.state] ?? [e.health?.state ?? "unknown", "warn"];
  const health = e.configured ? healthText : "not configured";
  return h(
    "li",
    { className: "card endpoint-card", "aria-label": e.endpoint_id },
    h("h3", null, e.endpoint_id),
    h(
      "dl",
      { className: "facts compact" },
      pair("Provider", e.provider),
      pair("Model", `${e.model}${e.model_version ? ` (${e.model_version})` : ""}`),
      pair("Aliases", e.aliases.join(", ") || DASH),
      pair("Region", e.inference_region),
      pair("Country", e.country || "unknown"),
      pair("Jurisdiction", e.jurisdiction || "unknown"),
      pair("Certifications", e.certifications && e.certifications.length ? e.certifications.join(", ") : "none declared"),
      pair("SEAL", e.seal === null || e.seal === undefined ? "unknown" : `SEAL-${e.seal}`),
      pair("Retention", e.retention),
      pair("Price (EUR / M tokens)", `${fmtNumber(e.price_eur_per_mtok.input, 2)} in · ${fmtNumber(e.price_eur_per_mtok.output, 2)} out`),
      pair("Health", h("span", { className: `health health-${e.configured ? healthClass : "off"}` }, health)),
      e.unavailable_reason ? pair("Why not", e.unavailable_reason) : null,
      pair(
        "Admitted by",
        e.admitted_by.length ? h("span", { className: "chips" }, e.admitted_by.map((p) => h("span", { className: "chip" }, p))) : "no policy",
      ),
    ),
  );
}

function pair(term, value) {
  return h("div", null, h("dt", null, term), h("dd", null, value));
}

function matrix(endpoints, policyIds, own) {
  return h(
    "section",
    { "aria-labelledby": "map-matrix" },
    h("h2", { id: "map-matrix" }, "Which policies admit which endpoints"),
    h(
      "div",
      { className: "table-wrap", tabIndex: 0, role: "region", "aria-label": "Policy admission matrix" },
      h(
        "table",
        { className: "matrix" },
        h(
          "thead",
          null,
          h(
            "tr",
            null,
            h("th", { scope: "col" }, "Endpoint"),
            h("th", { scope: "col" }, "Class"),
            h("th", { scope: "col" }, "Country"),
            policyIds.map((p) => h("th", { scope: "col", className: p === own ? "own" : null }, p)),
          ),
        ),
        h(
          "tbody",
          null,
          endpoints.map((e) =>
            h(
              "tr",
              null,
              h("th", { scope: "row" }, e.endpoint_id),
              h("td", null, h("span", { className: `badge class-${e.sovereignty_class}` }, e.sovereignty_class)),
              h("td", null, e.country || DASH),
              policyIds.map((p) => {
                const admitted = e.admitted_by.includes(p);
                return h(
                  "td",
                  { className: `admit ${admitted ? "yes" : "no"}` },
                  h("span", { "aria-hidden": "true" }, admitted ? "✓" : "✕"),
                  h("span", { className: "visually-hidden" }, admitted ? "admitted" : "excluded"),
                );
              }),
            ),
          ),
        ),
      ),
    ),
  );
}
