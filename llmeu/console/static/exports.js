// Exports for a period: records of processing (GDPR Art. 30), subprocessors,
// call metadata and the admin-event log, as the gateway writes them
// (`GET /v1/platform/exports/{name}`). The records of processing are shown
// here too; every export downloads as the file the API answers.

import { errorOf, send } from "./api.js";
import { errorNote, fill, h, isoDay } from "./dom.js";

const EXPORTS = [
  ["records-of-processing.md", "Records of processing (Markdown)"],
  ["records-of-processing.json", "Records of processing (JSON)"],
  ["subprocessors.csv", "Subprocessors (CSV)"],
  ["calls.jsonl", "Call metadata (JSON lines)"],
  ["admin-events.jsonl", "Admin events (JSON lines)"],
];

async function fetchExport(name, from, to) {
  const after = new Date(`${to}T00:00:00Z`).getTime() / 1000 + 86400;
  const query = { from: `${from}T00:00:00Z`, to: String(after) };
  const response = await send(`v1/platform/exports/${name}`, { query, headers: { accept: "*/*" } });
  if (!response.ok) throw await errorOf(response);
  return response.text();
}

export async function render(ctx, main) {
  const today = isoDay(Date.now() / 1000);
  const from = h("input", { id: "ex-from", name: "from", type: "date", value: isoDay(Date.now() / 1000 - 29 * 86400), required: true });
  const to = h("input", { id: "ex-to", name: "to", type: "date", value: today, required: true });
  const note = h("div", { "aria-live": "polite" });
  const records = h("pre", { className: "export-text", id: "records-text", tabIndex: 0, hidden: true });

  const row = ([name, label]) => {
    const download = h("button", { type: "button", "aria-label": `Download ${name}` }, "Download");
    download.addEventListener("click", async () => {
      note.replaceChildren();
      try {
        const text = await fetchExport(name, from.value, to.value);
        const link = h("a", { href: URL.createObjectURL(new Blob([text])), download: name });
        link.click();
        note.replaceChildren(h("p", { role: "status" }, `${name}: ${text.length.toLocaleString("en-GB")} characters.`));
      } catch (error) {
        note.replaceChildren(errorNote(error));
      }
    });
    return h("li", null, h("span", null, label, " ", h("code", null, name)), " ", download);
  };
  const show = h("button", { type: "button", id: "show-records" }, "Show the records of processing");
  show.addEventListener("click", async () => {
    note.replaceChildren();
    try {
      records.textContent = await fetchExport("records-of-processing.md", from.value, to.value);
      records.hidden = false;
    } catch (error) {
      note.replaceChildren(errorNote(error));
    }
  });

  fill(
    main,
    h("h1", { tabIndex: -1 }, "Exports"),
    h(
      "div",
      { className: "card filters" },
      h("div", { className: "field" }, h("label", { htmlFor: "ex-from" }, "From (UTC day)"), from),
      h("div", { className: "field" }, h("label", { htmlFor: "ex-to" }, "To (UTC day, included)"), to),
    ),
    h("ul", { className: "export-list" }, EXPORTS.map(row)),
    note,
    h("div", { className: "actions" }, show),
    records,
  );
}
