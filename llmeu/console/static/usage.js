// Usage: requests by status, tokens and cost per day, and the split by model,
// endpoint and sovereignty class, for a date range.
//
// "By model" is the model that ran; calls no model ran for (rejected, or failed on
// every endpoint) have a row of their own, and the names clients asked for (an
// alias, a typo) are a split of their own, "By requested model".
//
// Days are UTC days, as the platform API groups them. The range is inclusive
// in the form and sent with an exclusive `to` (the day after). Days without a
// call are drawn as empty columns so that time reads evenly.

import { api } from "./api.js";
import { barChart, chartFigure, columnChart, legend } from "./charts.js";
import { dataTable, fill, fmtEur, fmtNumber, h, isoDay } from "./dom.js";

const DAY = 86400;
const MAX_FILLED_DAYS = 400;

export const STATUS_SERIES = [
  ["completed", "Completed", "#15803d"],
  ["cancelled", "Cancelled", "#b45309"],
  ["failed", "Failed", "#b91c1c"],
  ["rejected", "Rejected", "#7e22ce"],
  ["interrupted", "Interrupted", "#4b5563"],
];
export const CLASS_COLORS = {
  on_premise: "#15803d",
  eu_sovereign: "#1d4ed8",
  eu_resident: "#b45309",
  global: "#b91c1c",
};

function addDays(day, days) {
  return isoDay(Date.parse(`${day}T00:00:00Z`) / 1000 + days * DAY);
}

function daysBetween(first, last) {
  const days = [];
  for (let day = first; day <= last && days.length < MAX_FILLED_DAYS; day = addDays(day, 1)) days.push(day);
  return days;
}

export async function render(ctx, main, { params }) {
  const today = isoDay(Date.now() / 1000);
  const from = params.get("from") ?? addDays(today, -6);
  const to = params.get("to") ?? today;
  const query = { from, to: addDays(to, 1) };
  const groups = ["day", "model", "requested_model", "endpoint", "sovereignty_class", ...(ctx.can("GET", "/v1/platform/usage") !== "own" ? ["key"] : [])];
  const results = await Promise.all(groups.map((group_by) => api("v1/platform/usage", { query: { ...query, group_by } })));
  const usage = Object.fromEntries(groups.map((group, i) => [group, results[i]]));
  const totals = usage.day.totals;

  fill(
    main,
    h("h1", { tabIndex: -1 }, "Usage"),
    rangeForm(from, to, today),
    summary(totals, from, to),
    ...(totals.requests ? charts(usage, from, to) : [h("p", { className: "empty card" }, "No calls in this range.")]),
  );
}

function rangeForm(from, to, today) {
  const fromInput = h("input", { type: "date", id: "usage-from", name: "from", value: from, max: today, required: true });
  const toInput = h("input", { type: "date", id: "usage-to", name: "to", value: to, required: true });
  const go = (f, t) => {
    location.hash = `#/usage?from=${f}&to=${t}`;
  };
  const form = h(
    "form",
    { className: "card range-form", method: "post", "aria-label": "Date range" },
    h("div", { className: "field" }, h("label", { htmlFor: "usage-from" }, "From (UTC day)"), fromInput),
    h("div", { className: "field" }, h("label", { htmlFor: "usage-to" }, "To (UTC day, included)"), toInput),
    h("button", { type: "submit", className: "primary" }, "Show"),
    h(
      "div",
      { className: "presets", role: "group", "aria-label": "Presets" },
      [["Today", 0], ["7 days", 6], ["30 days", 29], ["90 days", 89]].map(([name, back]) =>
        h("button", { type: "button", className: "small", onclick: () => go(addDays(today, -back), today) }, name),
      ),
    ),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (fromInput.value && toInput.value) go(fromInput.value, toInput.value);
  });
  return form;
}

function summary(totals, from, to) {
  const tile = (name, value, cls) =>
    h("div", { className: `tile ${cls ?? ""}` }, h("dt", null, name), h("dd", null, value));
  return h(
    "section",
    { "aria-label": `Totals from ${from} to ${to}` },
    h(
      "dl",
      { className: "tiles", id: "usage-totals" },
      tile("Requests", fmtNumber(totals.requests)),
      tile("Completed", fmtNumber(totals.completed), "status-completed"),
      tile("Cancelled", fmtNumber(totals.cancelled), "status-cancelled"),
      tile("Failed", fmtNumber(totals.failed), "status-failed"),
      tile("Rejected", fmtNumber(totals.rejected), "status-rejected"),
      tile("Interrupted", fmtNumber(totals.interrupted), "status-interrupted"),
      tile("Tokens in / out", `${fmtNumber(totals.input_tokens)} / ${fmtNumber(totals.output_tokens)}`, "wide"),
      tile("Cost", fmtEur(totals.cost_eur)),
      tile("Answered from the cache", `${fmtNumber(totals.cached ?? 0)} (saved ${fmtEur(totals.saved_eur ?? 0)})`, "wide"),
    ),
  );
}

function charts(usage, from, to) {
  const rows = new Map(usage.day.data.map((row) => [row.day, row]));
  const firstDay = usage.day.data.length ? usage.day.data[0].day : from;
  const days = daysBetween(from < firstDay ? from : firstDay, to);
  const at = (day, field) => rows.get(day)?.[field] ?? 0;
  const dayRows = days.map((day) => rows.get(day) ?? { day, requests: 0, completed: 0, cancelled: 0, failed: 0, rejected: 0, interrupted: 0, input_tokens: 0, output_tokens: 0, cost_eur: 0 });

  const statusSeries = STATUS_SERIES.map(([field, name, color]) => ({ name, color, values: days.map((d) => at(d, field)) }));
  const tokenSeries = [
    { name: "Input tokens", color: "#1d4ed8", values: days.map((d) => at(d, "input_tokens")) },
    { name: "Output tokens", color: "#0e7490", values: days.map((d) => at(d, "output_tokens")) },
  ];
  const costSeries = [{ name: "Cost (EUR)", color: "#1d4ed8", values: days.map((d) => at(d, "cost_eur")) }];
  const intLabel = (v) => fmtNumber(v);

  const figures = [
    chartFigure({
      id: "usage-status",
      title: "Requests by status, per day",
      chart: columnChart({ label: `Requests by status per day: ${describeTotals(usage.day.totals)}`, categories: days, series: statusSeries, format: intLabel, integer: true }),
      extra: legend(statusSeries),
      table: dataTable(
        [["Day", (r) => r.day], ...STATUS_SERIES.map(([field, name]) => [name, (r) => fmtNumber(r[field]), "num"]), ["Requests", (r) => fmtNumber(r.requests), "num"]],
        dayRows,
        { caption: "Requests by status, per day" },
      ),
    }),
    chartFigure({
      id: "usage-tokens",
      title: "Tokens per day",
      chart: columnChart({ label: `Tokens per day: ${fmtNumber(usage.day.totals.input_tokens)} in, ${fmtNumber(usage.day.totals.output_tokens)} out`, categories: days, series: tokenSeries, format: intLabel, integer: true }),
      extra: legend(tokenSeries),
      table: dataTable(
        [["Day", (r) => r.day], ["Input tokens", (r) => fmtNumber(r.input_tokens), "num"], ["Output tokens", (r) => fmtNumber(r.output_tokens), "num"], ["Estimated requests", (r) => fmtNumber(r.estimated_requests ?? 0), "num"]],
        dayRows,
        { caption: "Tokens per day" },
      ),
    }),
    chartFigure({
      id: "usage-cost",
      title: "Cost per day (EUR)",
      // An empty plot reads as "no data"; say what it means.
      chart: usage.day.totals.cost_eur
        ? columnChart({ label: `Cost per day, ${fmtEur(usage.day.totals.cost_eur)} in all`, categories: days, series: costSeries, format: fmtEur })
        : h("p", { className: "empty" }, "No cost in this period (€0)."),
      table: dataTable([["Day", (r) => r.day], ["Cost", (r) => fmtEur(r.cost_eur), "num"]], dayRows, { caption: "Cost per day" }),
    }),
  ];
  const splits = [
    ["model", "By model"],
    ["requested_model", "By requested model"],
    ["endpoint", "By endpoint"],
    ["sovereignty_class", "By sovereignty class"],
    ...(usage.key ? [["key", "By key"]] : []),
  ];
  for (const [group, title] of splits) {
    const data = [...usage[group].data].sort((a, b) => b.requests - a.requests);
    figures.push(
      chartFigure({
        id: `usage-by-${group.replace("_", "-")}`,
        title: `${title} (requests)`,
        chart: barChart({
          label: `${title}: ${data.map((r) => `${groupLabel(group, r)} ${r.requests}`).join(", ")}`,
          rows: data.map((r) => ({ label: groupLabel(group, r), value: r.requests, color: CLASS_COLORS[r[group]] })),
          format: intLabel,
        }),
        table: dataTable(
          [
            [title.replace("By ", "").replace(/^./, (c) => c.toUpperCase()), (r) => groupLabel(group, r)],
            ["Requests", (r) => fmtNumber(r.requests), "num"],
            ...STATUS_SERIES.map(([field, name]) => [name, (r) => fmtNumber(r[field]), "num"]),
            ["Tokens in", (r) => fmtNumber(r.input_tokens), "num"],
            ["Tokens out", (r) => fmtNumber(r.output_tokens), "num"],
            ["Cost", (r) => fmtEur(r.cost_eur), "num"],
          ],
          data,
          { caption: title },
        ),
      }),
    );
  }
  return [h("div", { className: "chart-grid" }, figures)];
}

// A row without a value: for the model, calls no model ran for; elsewhere, nothing known.
function groupLabel(group, row) {
  if (row[group]) return row[group];
  if (group === "model") return row.rejected === row.requests ? "Rejected (no model ran)" : "(no model ran)";
  if (group === "endpoint") return "(no endpoint served)";
  return "(none)";
}

function describeTotals(totals) {
  return STATUS_SERIES.map(([field, name]) => `${totals[field]} ${name.toLowerCase()}`).join(", ");
}
