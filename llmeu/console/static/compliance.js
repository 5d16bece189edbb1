// Legal holds and erasure by data subject: the DPO's page. Every role that may
// read holds and erasures (admin, dpo, auditor) sees them; placing or
// releasing a hold and erasing a subject show only for a role that may
// (admin, dpo). The gateway checks; its refusal is shown where it was asked.

import { api } from "./api.js";
import { dataTable, DASH, errorNote, fill, fmtTime, h } from "./dom.js";

const HOLDS = "/v1/platform/holds";
const HOLD = "/v1/platform/holds/{hold_id}";
const ERASE = "/v1/platform/subjects/{user_id}";

export async function render(ctx, main) {
  const holds = h("div", { id: "hold-list" });
  const erasures = h("div", { id: "erasure-list" });

  async function refresh() {
    const [held, erased] = await Promise.all([
      ctx.can("GET", HOLDS) ? api("v1/platform/holds") : null,
      ctx.can("GET", "/v1/platform/erasures") ? api("v1/platform/erasures") : null,
    ]);
    if (held) holds.replaceChildren(holdTable(ctx, held.data, refresh));
    if (erased) erasures.replaceChildren(erasureTable(erased.data));
  }

  fill(
    main,
    h("h1", { tabIndex: -1 }, "Holds & erasure"),
    h(
      "section",
      { "aria-labelledby": "holds-title" },
      h("h2", { id: "holds-title" }, "Legal holds"),
      h("p", { className: "hint" }, "A held key's traces (or, held for all, every trace) are kept past their retention until the hold is released."),
      ctx.can("POST", HOLDS) ? holdForm(refresh) : null,
      holds,
    ),
    h(
      "section",
      { "aria-labelledby": "erasures-title" },
      h("h2", { id: "erasures-title" }, "Erasure by data subject"),
      h("p", { className: "hint" }, "Erases the stored prompts and answers of every call made for that end user (the `user` field); the calls' metadata and the hash chain stay."),
      ctx.can("DELETE", ERASE) ? eraseForm(refresh) : null,
      erasures,
    ),
  );
  await refresh();
}

function holdForm(refresh) {
  const reason = h("input", { id: "hold-reason", name: "reason", required: true, maxLength: 2000, autocomplete: "off" });
  const keyId = h("input", { id: "hold-key", name: "key_id", maxLength: 200, autocomplete: "off" });
  const note = h("div", { "aria-live": "polite" });
  const form = h(
    "form",
    { className: "card", method: "post", "aria-label": "Place a legal hold" },
    h(
      "div",
      { className: "filters" },
      h("div", { className: "field" }, h("label", { htmlFor: "hold-reason" }, "Reason"), reason),
      h("div", { className: "field" }, h("label", { htmlFor: "hold-key" }, "Key id"), keyId, h("p", { className: "hint" }, "Empty: hold every trace.")),
    ),
    h("div", { className: "actions" }, h("button", { type: "submit", className: "primary" }, "Place hold")),
    note,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    note.replaceChildren();
    try {
      await api("v1/platform/holds", { method: "POST", body: { reason: reason.value.trim(), key_id: keyId.value.trim() || null } });
      form.reset();
      await refresh();
    } catch (error) {
      note.replaceChildren(errorNote(error));
    }
  });
  return form;
}

function holdTable(ctx, holds, refresh) {
  const release = (hold) => {
    const button = h("button", { type: "button", className: "small", "aria-label": `Release hold ${hold.id}` }, "Release");
    button.addEventListener("click", async () => {
      if (!window.confirm(`Release the hold "${hold.reason}"? Its traces follow their retention again.`)) return;
      try {
        await api(`v1/platform/holds/${encodeURIComponent(hold.id)}`, { method: "DELETE" });
        await refresh();
      } catch (error) {
        button.replaceWith(errorNote(error));
      }
    });
    return button;
  };
  return dataTable(
    [
      ["Reason", (x) => x.reason],
      ["Scope", (x) => (x.key_id ? h("code", null, x.key_id) : "every trace")],
      ["Placed", (x) => `${fmtTime(x.created_at, false)} by ${x.created_by}`],
      ["Released", (x) => (x.released_at ? `${fmtTime(x.released_at, false)} by ${x.released_by}` : DASH)],
      ["", (x) => (x.active && ctx.can("DELETE", HOLD) ? release(x) : null)],
    ],
    holds,
    { caption: "Legal holds, released ones included", empty: "No legal holds." },
  );
}

function eraseForm(refresh) {
  const subject = h("input", { id: "erase-subject", name: "user_id", required: true, maxLength: 256, autocomplete: "off" });
  const note = h("div", { "aria-live": "polite" });
  const form = h(
    "form",
    { className: "card", method: "post", "aria-label": "Erase a data subject" },
    h("div", { className: "field" }, h("label", { htmlFor: "erase-subject" }, "End user id"), subject),
    h("div", { className: "actions" }, h("button", { type: "submit", className: "danger" }, "Erase")),
    note,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const user = subject.value.trim();
    if (!window.confirm(`Erase the stored content of every call made for ${user}? This cannot be undone.`)) return;
    note.replaceChildren();
    try {
      const done = await api(`v1/platform/subjects/${encodeURIComponent(user)}`, { method: "DELETE" });
      form.reset();
      note.replaceChildren(h("p", { role: "status" }, `Erased the content of ${done.traces_erased} call(s).`));
      await refresh();
    } catch (error) {
      note.replaceChildren(errorNote(error));
    }
  });
  return form;
}

function erasureTable(erasures) {
  return dataTable(
    [
      ["Subject (SHA-256)", (e) => h("code", { title: e.subject_sha256 }, `${e.subject_sha256.slice(0, 16)}…`)],
      ["When", (e) => fmtTime(e.requested_at, false)],
      ["By", (e) => e.requested_by],
      ["Calls", (e) => String(e.traces_erased), "num"],
    ],
    erasures,
    { caption: "Erasures done", empty: "No erasures." },
  );
}
