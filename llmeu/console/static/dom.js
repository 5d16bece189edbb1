// Small DOM and formatting helpers shared by the views.
//
// Every node is built with createElement and text nodes, never from HTML
// strings: traces hold prompts and answers written by anyone, and the page
// must show them as text.

const SVG_NS = "http://www.w3.org/2000/svg";

// Props are set as attributes (so that nothing depends on which DOM
// properties are writable), except `value` and `checked`, which are state.
const ATTRIBUTE_NAMES = { className: "class", htmlFor: "for", tabIndex: "tabindex", readOnly: "readonly", maxLength: "maxlength" };

function build(node, props, children) {
  for (const [name, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      node.addEventListener(name.slice(2), value);
    } else if (name === "dataset") {
      Object.assign(node.dataset, value);
    } else if (name === "value" || name === "checked") {
      node[name] = value;
      if (name === "value") node.setAttribute("value", value);
    } else {
      node.setAttribute(ATTRIBUTE_NAMES[name] ?? name, value === true ? "" : String(value));
    }
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

/** An HTML element: h("a", {href: "#x", className: "c"}, "text", otherNode). */
export function h(tag, props, ...children) {
  return build(document.createElement(tag), props, children);
}

/** An SVG element; attributes are always set as attributes. */
export function s(tag, props, ...children) {
  return build(document.createElementNS(SVG_NS, tag), props, children);
}

export const DASH = "—";

export function fmtNumber(value, digits = 0) {
  if (value === null || value === undefined) return DASH;
  return Number(value).toLocaleString("en-GB", {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  });
}

/** EUR amounts are often fractions of a cent: keep four significant digits. */
// Money as the CLI shows it (llmeu/cli/money.py): €0; below €1, three significant
// digits with at least two decimals (a call often costs a fraction of a cent);
// from €1 up, cents with thousands separators.
export function fmtEur(value) {
  if (value === null || value === undefined) return DASH;
  if (value === 0) return "€0";
  const sign = value < 0 ? "-" : "";
  const size = Math.abs(value);
  if (size >= 1) return `${sign}€${fmtNumber(size, 2)}`;
  const text = size.toFixed(Math.min(20, Math.max(2, 2 - Math.floor(Math.log10(size)))));
  if (text.startsWith("1.")) return `${sign}€${fmtNumber(size, 2)}`;
  const [whole, fraction] = text.split(".");
  return `${sign}€${whole}.${fraction.replace(/0+$/, "").padEnd(2, "0")}`;
}

export function fmtMs(value) {
  if (value === null || value === undefined) return DASH;
  if (value >= 10000) return `${fmtNumber(value / 1000, 1)} s`;
  return `${fmtNumber(value, value < 10 ? 1 : 0)} ms`;
}

/** Epoch seconds as local date and time (the viewer's clock; the API speaks UTC). */
export function fmtTime(epochSeconds, withSeconds = true) {
  if (epochSeconds === null || epochSeconds === undefined) return DASH;
  const options = { dateStyle: "medium", timeStyle: withSeconds ? "medium" : "short" };
  return new Date(epochSeconds * 1000).toLocaleString("en-GB", options);
}

export function statusBadge(status) {
  return h("span", { className: `badge status-${status}` }, status.replace("_", " "));
}

/** A trace answered from the answer cache: a flag beside its status, which stays the call's. */
export function cachedBadge(trace) {
  return trace.cached ? h("span", { className: "badge cached", title: "answered from the answer cache" }, "cached") : null;
}

/** A table of rows; `columns` are [heading, row => cell content, className?]. */
export function dataTable(columns, rows, { caption, empty = "Nothing to show." } = {}) {
  if (!rows.length) return h("p", { className: "empty" }, empty);
  return h(
    "div",
    { className: "table-wrap", tabIndex: 0, role: "region", "aria-label": caption ?? "table" },
    h(
      "table",
      null,
      caption ? h("caption", null, caption) : null,
      h("thead", null, h("tr", null, columns.map(([title, , cls]) => h("th", { scope: "col", className: cls }, title)))),
      h(
        "tbody",
        null,
        rows.map((row) => h("tr", null, columns.map(([, cell, cls]) => h("td", { className: cls }, cell(row))))),
      ),
    ),
  );
}

/** A description list from [term, value] pairs; null values are shown as a dash. */
export function facts(pairs, className = "facts") {
  return h(
    "dl",
    { className },
    pairs.map(([term, value]) => h("div", null, h("dt", null, term), h("dd", null, value ?? DASH))),
  );
}

export function errorNote(error) {
  return h("p", { className: "error", role: "alert" }, error?.message ?? String(error));
}

/** Seconds since the epoch → the value of an <input type="date"> (UTC day). */
export function isoDay(epochSeconds) {
  return new Date(epochSeconds * 1000).toISOString().slice(0, 10);
}

/** A datetime-local value (the viewer's clock) → epoch seconds for the API (a string). */
export function epochOfLocal(local) {
  if (!local) return undefined;
  const time = new Date(local).getTime();
  return Number.isNaN(time) ? undefined : String(time / 1000);
}

/** Replace the children of `node`, skipping null and false (views pass optional parts). */
export function fill(node, ...children) {
  node.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
  return node;
}

/** A labelled control of a filter form. */
export function field(id, label, control) {
  return h("div", { className: "field" }, h("label", { htmlFor: id }, label), control);
}

/**
 * A list's filter form whose Filter button puts the values chosen in the URL
 * fragment of the list (`#/traces?model=…`): the link can be shared, and the
 * view, drawn again from the fragment, shows them. Submitting the same
 * values again draws it again all the same. `limit`, when the fragment has
 * one, is kept.
 */
export function fragmentFilterForm(path, label, limit, ...children) {
  const form = h(
    "form",
    { className: "card filter-form", method: "post", "aria-label": label },
    limit ? h("input", { type: "hidden", name: "limit", value: limit }) : null,
    ...children,
    h(
      "div",
      { className: "actions" },
      h("button", { type: "submit", className: "primary" }, "Filter"),
      h("a", { href: `#/${path}`, className: "button-link" }, "Clear"),
    ),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = new URLSearchParams();
    for (const [name, value] of new FormData(form)) if (value) chosen.set(name, value);
    const next = `#/${path}${chosen.size ? `?${chosen}` : ""}`;
    if (location.hash === next) window.dispatchEvent(new HashChangeEvent("hashchange"));
    else location.hash = next;
  });
  return form;
}

/**
 * A list paged with the API's cursor, newest first: each page is appended,
 * so the list never re-sorts under the reader. `fetchPage(cursor)` gives a
 * page (`data`, `next_cursor`, `has_more`); `table(rows)` draws all rows so
 * far. Gives the parts to place — `count` (a status line), `list` and `more`
 * (the "Load more" button) — and `load`, which fetches the next page.
 */
export function cursorPager(id, noun, fetchPage, table) {
  const list = h("div", { id });
  const more = h("button", { type: "button", hidden: true }, "Load more");
  const count = h("p", { className: "hint", role: "status", "aria-live": "polite" });
  let cursor = null;
  let rows = [];

  async function load() {
    more.disabled = true;
    const page = await fetchPage(cursor);
    rows = rows.concat(page.data);
    cursor = page.next_cursor;
    list.replaceChildren(table(rows));
    more.hidden = !page.has_more;
    more.disabled = false;
    const shown = rows.length;
    count.textContent = shown ? `${shown} ${noun}${shown === 1 ? "" : "s"} shown${page.has_more ? ", more available" : ""}.` : "";
  }
  more.addEventListener("click", async () => {
    const before = rows.length;
    await load();
    // Keep the keyboard where the reader was: on the first new row's link, if rows have one.
    list.querySelectorAll("tbody tr a")[before]?.focus();
  });
  return { count, list, more, load };
}
