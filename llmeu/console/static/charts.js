// Hand-drawn SVG charts: stacked columns over time and horizontal bars.
//
// Drawn at the width of their container in CSS pixels (text stays readable at
// phone widths, which scaling a viewBox would not give) and drawn again when
// that width changes. Each chart is an image with a text summary for screen
// readers; every bar carries a <title> with its number, and the figure it
// sits in has a table of the same numbers one click away.

import { h, s } from "./dom.js";

const FONT = 12;

/** The top of the axis and its ticks: round numbers, whole ones for counts. */
function scale(value, integer) {
  if (value <= 0) return { max: integer ? 4 : 1, ticks: [0, 0.25, 0.5, 0.75, 1].map((t) => t * (integer ? 4 : 1)) };
  const rough = value / 4;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  let step = [1, 2, 2.5, 5, 10].find((m) => m * magnitude >= rough) * magnitude;
  if (integer) step = Math.max(1, Math.ceil(step));
  const count = Math.ceil(value / step);
  return { max: step * count, ticks: Array.from({ length: count + 1 }, (_, i) => step * i) };
}

const TEXT_WIDTH = 7; // px per character of the 12 px axis font, near enough to reserve room

/** Redraw `draw(width)` into `holder` whenever its width changes. */
export function responsive(holder, draw) {
  let width = 0;
  const paint = () => {
    const next = Math.max(260, Math.floor(holder.clientWidth || 600));
    if (next === width) return;
    width = next;
    holder.replaceChildren(draw(width));
  };
  // The observer also fires once the holder is in the document and laid out.
  new ResizeObserver(paint).observe(holder);
  paint();
  return holder;
}

/**
 * Columns per category (days), stacked by series.
 * series: [{name, color, values: number[]}]; format(value) labels the axis.
 */
export function columnChart({ label, categories, series, format = String, integer = false }) {
  const holder = h("div", { className: "chart" });
  return responsive(holder, (width) => {
    const totals = categories.map((_, i) => series.reduce((sum, one) => sum + (one.values[i] || 0), 0));
    const { max, ticks } = scale(Math.max(0, ...totals), integer);
    const labelChars = Math.max(...ticks.map((t) => format(t).length));
    const height = 220;
    const pad = { top: 12, right: 8, bottom: 34, left: 12 + labelChars * TEXT_WIDTH };
    const plotW = width - pad.left - pad.right;
    const plotH = height - pad.top - pad.bottom;
    const y = (v) => pad.top + plotH - (v / max) * plotH;
    const band = plotW / Math.max(1, categories.length);
    const barW = Math.max(2, Math.min(48, band * 0.7));
    const svg = s("svg", { width, height, role: "img", "aria-label": label, class: "chart-svg" });
    for (const tick of ticks) {
      svg.append(
        s("line", { x1: pad.left, x2: width - pad.right, y1: y(tick), y2: y(tick), class: "grid" }),
        s("text", { x: pad.left - 6, y: y(tick) + 4, "text-anchor": "end", class: "axis", "font-size": FONT }, format(tick)),
      );
    }
    // Label as many days as fit without overlapping.
    const every = Math.ceil(categories.length / Math.max(1, Math.floor(plotW / 56)));
    categories.forEach((category, i) => {
      const x = pad.left + band * i + (band - barW) / 2;
      let base = 0;
      for (const one of series) {
        const value = one.values[i] || 0;
        if (value > 0) {
          svg.append(
            s(
              "rect",
              { x, y: y(base + value), width: barW, height: Math.max(1, y(base) - y(base + value)), fill: one.color },
              s("title", null, `${category} · ${one.name}: ${format(value)}`),
            ),
          );
        }
        base += value;
      }
      if (i % every === 0) {
        svg.append(
          s("text", { x: x + barW / 2, y: height - pad.bottom + 16, "text-anchor": "middle", class: "axis", "font-size": FONT }, shortDay(category)),
        );
      }
    });
    svg.append(s("line", { x1: pad.left, x2: width - pad.right, y1: y(0), y2: y(0), class: "baseline" }));
    return svg;
  });
}

/** One horizontal bar per row: rows [{label, value, color?}]. */
export function barChart({ label, rows, format = String, color = "#1d4ed8" }) {
  const holder = h("div", { className: "chart" });
  return responsive(holder, (width) => {
    const rowH = 28;
    const labelW = Math.min(180, Math.floor(width * 0.4));
    const valueW = 72;
    const height = Math.max(1, rows.length) * rowH + 8;
    const max = Math.max(0, ...rows.map((r) => r.value)) || 1;
    const plotW = width - labelW - valueW - 8;
    const svg = s("svg", { width, height, role: "img", "aria-label": label, class: "chart-svg" });
    rows.forEach((row, i) => {
      const top = 4 + i * rowH;
      const w = Math.max(row.value > 0 ? 2 : 0, (row.value / max) * plotW);
      svg.append(
        s("text", { x: labelW - 8, y: top + 18, "text-anchor": "end", class: "axis label", "font-size": FONT }, clip(row.label || "(none)", labelW / 7)),
        s("rect", { x: labelW, y: top + 5, width: w, height: rowH - 10, fill: row.color ?? color }, s("title", null, `${row.label}: ${format(row.value)}`)),
        s("text", { x: labelW + w + 6, y: top + 18, class: "axis value", "font-size": FONT }, format(row.value)),
      );
    });
    return svg;
  });
}

export function legend(series) {
  return h(
    "ul",
    { className: "legend" },
    series.map((one) =>
      h("li", null, s("svg", { width: 12, height: 12, "aria-hidden": "true" }, s("rect", { width: 12, height: 12, rx: 2, fill: one.color })), one.name),
    ),
  );
}

/**
 * A figure holding a chart and the same numbers as a table; one button
 * switches between the two.
 */
export function chartFigure({ id, title, chart, table, extra }) {
  const chartBox = h("div", { id: `${id}-chart` }, chart, extra);
  const tableBox = h("div", { id: `${id}-table`, hidden: true }, table);
  const toggle = h(
    "button",
    { type: "button", className: "small", "aria-expanded": "false", "aria-controls": `${id}-table` },
    "Show numbers",
  );
  toggle.addEventListener("click", () => {
    const showTable = tableBox.hidden;
    tableBox.hidden = !showTable;
    chartBox.hidden = showTable;
    toggle.setAttribute("aria-expanded", String(showTable));
    toggle.textContent = showTable ? "Show chart" : "Show numbers";
  });
  return h(
    "figure",
    { className: "card chart-card", id, "aria-labelledby": `${id}-title` },
    h("div", { className: "chart-head" }, h("figcaption", { id: `${id}-title` }, title), toggle),
    chartBox,
    tableBox,
  );
}

function shortDay(day) {
  const date = new Date(`${day}T00:00:00Z`);
  if (Number.isNaN(date.getTime())) return day;
  return date.toLocaleDateString("en-GB", { day: "numeric", month: "short", timeZone: "UTC" });
}

function clip(text, chars) {
  const max = Math.max(6, Math.floor(chars));
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
