// Traces: a filterable list, newest first, paged with the API's cursor.
//
// The filters live in the URL fragment (#/traces?status=cancelled), so a
// filtered list can be linked to and the back button returns to it. "Load
// more" follows `next_cursor` and appends: the list never re-sorts under
// the reader's eyes.

import { api } from "./api.js";
import { cachedBadge, cursorPager, dataTable, DASH, epochOfLocal, field, fill, fmtEur, fmtMs, fmtNumber, fragmentFilterForm, h, statusBadge } from "./dom.js";

const STATUSES = ["completed", "cancelled", "failed", "rejected", "interrupted", "in_progress"];
const PAGE = 50;

export async function render(ctx, main, { params }) {
  const filters = Object.fromEntries(
    ["status", "model", "endpoint_id", "key_id", "from", "to"].map((name) => [name, params.get(name) ?? ""]),
  );
  // A key filter only for a role that reads other keys' calls and may list them.
  const byKey = ctx.can("GET", "/v1/platform/traces") !== "own" && ctx.can("GET", "/v1/platform/keys") !== null;
  const [endpoints, keys] = await Promise.all([
    api("v1/platform/endpoints"),
    byKey ? api("v1/platform/keys") : Promise.resolve(null),
  ]);
  const query = {
    status: filters.status,
    model: filters.model,
    endpoint_id: filters.endpoint_id,
    key_id: byKey ? filters.key_id : "",
    from: epochOfLocal(filters.from),
    to: epochOfLocal(filters.to),
    limit: params.get("limit") || PAGE,
  };
  const pager = cursorPager(
    "trace-list",
    "trace",
    (cursor) => api("v1/platform/traces", { query: { ...query, cursor } }),
    traceTable,
  );

  fill(
    main,
    h("h1", { tabIndex: -1 }, "Traces"),
    filterForm(ctx, filters, endpoints.data, keys?.data ?? null, params.get("limit")),
    pager.count,
    pager.list,
    h("div", { className: "actions" }, pager.more),
  );
  await pager.load();
}

/** `trc_…` ids are long; the list shows their end, which is what differs. */
function shortId(id) {
  return id.length > 16 ? `${id.slice(0, 4)}…${id.slice(-8)}` : id;
}

function fmtShortTime(epochSeconds) {
  const date = new Date(epochSeconds * 1000);
  const day = date.toLocaleDateString("en-GB", { day: "numeric", month: "short" });
  return `${day} ${date.toLocaleTimeString("en-GB")}`;
}

function traceTable(rows) {
  return dataTable(
    [
      // The time is the link: at phone widths it is the one column that always shows.
      [
        "Received",
        (t) =>
          h(
            "a",
            { href: `#/traces/${encodeURIComponent(t.id)}`, "aria-label": `Trace ${t.id}, ${t.status}`, className: "nowrap" },
            fmtShortTime(t.timings.received_at),
          ),
      ],
      ["Status", (t) => [statusBadge(t.status), t.cached ? " " : null, cachedBadge(t)]],
      ["Model", (t) => t.routing.model_used ?? t.request_model],
      ["Endpoint", (t) => t.routing.endpoint_id ?? (t.mcp ? `MCP ${t.mcp.server}` : DASH), "wide-only"],
      ["Class", (t) => (t.routing.sovereignty_class ? h("span", { className: `badge class-${t.routing.sovereignty_class}` }, t.routing.sovereignty_class) : DASH), "wide-only"],
      ["Tokens", (t) => `${fmtNumber(t.usage.input_tokens)} / ${fmtNumber(t.usage.output_tokens)}${t.usage.estimated ? "*" : ""}`, "num wide-only"],
      ["Cost", (t) => fmtEur(t.usage.cost_eur), "num wide-only"],
      ["TTFT", (t) => fmtMs(t.timings.ttft_ms), "num wide-only"],
      ["Trace id", (t) => h("code", { title: t.id }, shortId(t.id)), "wide-only"],
    ],
    rows,
    { caption: "Traces, newest first (tokens in / out; * estimated)", empty: "No trace matches these filters." },
  );
}

function filterForm(ctx, filters, endpoints, keys, limit) {
  const select = (id, name, value, options) => {
    const node = h("select", { id, name }, options.map(([v, text]) => h("option", { value: v }, text)));
    node.value = value;
    return node;
  };
  const models = [...new Set(endpoints.flatMap((e) => (e.aliases.length ? e.aliases : [e.model])))].sort();
  const controls = [
    field("f-status", "Status", select("f-status", "status", filters.status, [["", "Any"], ...STATUSES.map((s) => [s, s.replace("_", " ")])])),
    field(
      "f-model",
      "Model",
      h("input", { id: "f-model", name: "model", value: filters.model, list: "f-model-list", autocomplete: "off" }),
    ),
    field(
      "f-endpoint",
      "Endpoint",
      select("f-endpoint", "endpoint_id", filters.endpoint_id, [["", "Any"], ...endpoints.map((e) => [e.endpoint_id, e.endpoint_id])]),
    ),
    keys
      ? field("f-key", "Key", select("f-key", "key_id", filters.key_id, [["", "Any"], ...keys.map((k) => [k.id, k.name ? `${k.name} (${k.id})` : k.id])]))
      : null,
    field("f-from", "From (local time)", h("input", { id: "f-from", name: "from", type: "datetime-local", value: filters.from })),
    field("f-to", "Before (local time)", h("input", { id: "f-to", name: "to", type: "datetime-local", value: filters.to })),
  ];
  return fragmentFilterForm(
    "traces",
    "Filter traces",
    limit,
    h("datalist", { id: "f-model-list" }, models.map((m) => h("option", { value: m }))),
    h("div", { className: "filters" }, controls),
  );
}
