// Verification, for the roles that read every key's receipts (admin, auditor):
// the recent calls' signed receipts checked here, in the browser, against the
// signing keys the gateway publishes (receipt.js), and the offline checks an
// auditor runs on an export (`llmeu receipt verify`, `llmeu audit verify`).
// The gateway has no route that verifies its own ledger: a verifier that the
// verified party runs proves little, so the chain is checked offline.

import { api, apiUrl } from "./api.js";
import { dataTable, DASH, errorNote, fill, fmtTime, h } from "./dom.js";
import { checkReceipt, downloadHref } from "./receipt.js";

const RECENT = 20;
const LABELS = { valid: "Signature valid", invalid: "Signature invalid", unchecked: "Not checked" };

export async function render(ctx, main) {
  const response = await fetch(apiUrl(".well-known/llmeu/jwks.json"), { cache: "no-store", credentials: "omit" });
  const jwks = (await response.json()).keys;
  const results = h("div", { id: "receipt-results" });
  const summary = h("p", { className: "hint", role: "status", "aria-live": "polite" });
  const run = h("button", { type: "button", className: "primary", id: "verify-receipts" }, `Check the last ${RECENT} receipts`);
  run.addEventListener("click", async () => {
    run.disabled = true;
    summary.textContent = "Checking…";
    try {
      const page = await api("v1/platform/traces", { query: { limit: RECENT } });
      const finals = page.data.filter((t) => t.status !== "in_progress");
      const checked = await Promise.all(finals.map((t) => checkReceipt(t).catch((error) => ({ state: "invalid", reason: error.message }))));
      const rows = finals.map((trace, i) => ({ trace, ...checked[i] }));
      const valid = rows.filter((r) => r.state === "valid").length;
      summary.textContent = `${valid} of ${rows.length} receipts verify.`;
      results.replaceChildren(receiptTable(rows));
    } catch (error) {
      summary.replaceChildren(errorNote(error));
    }
    run.disabled = false;
  });

  fill(
    main,
    h("h1", { tabIndex: -1 }, "Verification"),
    h(
      "section",
      { "aria-labelledby": "receipts-title" },
      h("h2", { id: "receipts-title" }, "Receipts"),
      h(
        "p",
        { className: "hint" },
        "Every final call has a receipt signed with Ed25519. This page checks each against the published keys below; ",
        "the check an auditor relies on is ",
        h("code", null, "llmeu receipt verify"),
        " or any JOSE library, on a receipt downloaded here.",
      ),
      h("div", { className: "actions" }, run),
      summary,
      results,
    ),
    h(
      "section",
      { "aria-labelledby": "jwks-title" },
      h("h2", { id: "jwks-title" }, "Signing keys"),
      dataTable(
        [
          ["Key id", (k) => h("code", null, k.kid)],
          ["Curve", (k) => `${k.kty} ${k.crv}`],
          ["Use", (k) => k.use ?? DASH],
        ],
        jwks,
        { caption: "Keys published at /.well-known/llmeu/jwks.json", empty: "No signing key published." },
      ),
    ),
    h(
      "section",
      { "aria-labelledby": "chain-title" },
      h("h2", { id: "chain-title" }, "The hash chain"),
      h(
        "p",
        null,
        "Calls and administrative changes are links of one hash chain in the ledger. Check it offline, where the gateway cannot answer for itself: ",
        h("code", null, "llmeu audit verify --database-url URL --jwks JWKS"),
        " names every edited, deleted or reordered call and admin event.",
      ),
      ctx.can("GET", "/v1/platform/exports/{name}")
        ? h("p", null, "The admin events and call metadata to keep beside it are on the ", h("a", { href: "#/exports" }, "Exports"), " page.")
        : null,
    ),
  );
}

function receiptTable(rows) {
  return dataTable(
    [
      ["Trace", (r) => h("a", { href: `#/traces/${encodeURIComponent(r.trace.id)}` }, h("code", null, r.trace.id))],
      ["Received", (r) => fmtTime(r.trace.timings.received_at), "wide-only"],
      ["Status", (r) => r.trace.status],
      ["Receipt", (r) => [h("span", { className: `badge receipt-${r.state}` }, LABELS[r.state]), ` ${r.reason}`]],
      ["", (r) => (r.receipt ? h("a", { href: downloadHref(r.receipt), download: `${r.trace.id}.jws` }, "Download") : null)],
    ],
    rows,
    { caption: "Recent receipts, newest first", empty: "No finished calls yet." },
  );
}
