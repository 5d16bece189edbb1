// The admin-event log: every administrative change (keys, policies, teams,
// holds, erasures, reloads, sign-ins…), newest first, as the gateway chains
// it into the ledger. Filters live in the URL fragment as on the Traces page;
// "Load more" follows the API's cursor.

import { api } from "./api.js";
import { cursorPager, dataTable, DASH, epochOfLocal, field, fill, fmtTime, fragmentFilterForm, h } from "./dom.js";

const PAGE = 50;

export async function render(ctx, main, { params }) {
  const filters = Object.fromEntries(["action", "actor", "from", "to"].map((name) => [name, params.get(name) ?? ""]));
  const query = {
    action: filters.action,
    actor: filters.actor,
    from: epochOfLocal(filters.from),
    to: epochOfLocal(filters.to),
    limit: params.get("limit") || PAGE,
  };
  const pager = cursorPager(
    "event-list",
    "event",
    (cursor) => api("v1/platform/admin-events", { query: { ...query, cursor } }),
    eventTable,
  );

  fill(
    main,
    h("h1", { tabIndex: -1 }, "Admin events"),
    h(
      "p",
      { className: "lead" },
      "Every administrative change, newest first. Each is a link of the ledger's hash chain, as calls are: ",
      h("code", null, "llmeu audit verify"),
      " names one that was edited, deleted or moved.",
    ),
    filterForm(filters, params.get("limit")),
    pager.count,
    pager.list,
    h("div", { className: "actions" }, pager.more),
  );
  await pager.load();
}

/** A SHA-256 digest, shortened; the whole one in its title. */
function digest(value) {
  return value ? h("code", { title: value }, `${value.slice(0, 12)}…`) : DASH;
}

function eventTable(rows) {
  return dataTable(
    [
      ["Time", (e) => h("span", { className: "nowrap" }, fmtTime(e.at))],
      ["Actor", (e) => h("code", null, e.actor)],
      ["Role", (e) => e.role ?? DASH],
      ["Action", (e) => h("span", { className: "event-action" }, e.action)],
      ["Target", (e) => (e.target ? h("code", null, e.target) : DASH)],
      ["Source", (e) => e.source ?? DASH, "wide-only"],
      ["Before", (e) => digest(e.before_sha256), "wide-only"],
      ["After", (e) => digest(e.after_sha256), "wide-only"],
      ["Chain", (e) => (e.chain_seq == null ? "pending" : `#${e.chain_seq}`), "num wide-only"],
    ],
    rows,
    { caption: "Admin events, newest first (before/after: SHA-256 of the target's state)", empty: "No admin event matches these filters." },
  );
}

function filterForm(filters, limit) {
  return fragmentFilterForm(
    "events",
    "Filter admin events",
    limit,
    h(
      "div",
      { className: "filters" },
      field("ev-action", "Action", h("input", { id: "ev-action", name: "action", value: filters.action, autocomplete: "off", placeholder: "key.create" })),
      field("ev-actor", "Actor", h("input", { id: "ev-actor", name: "actor", value: filters.actor, autocomplete: "off", placeholder: "key id or user:subject" })),
      field("ev-from", "From (local time)", h("input", { id: "ev-from", name: "from", type: "datetime-local", value: filters.from })),
      field("ev-to", "Before (local time)", h("input", { id: "ev-to", name: "to", type: "datetime-local", value: filters.to })),
    ),
  );
}
