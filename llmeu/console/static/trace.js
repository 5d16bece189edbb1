// One trace: what was asked, where it ran, every endpoint tried or excluded,
// the timings, the tokens (reported or estimated), and the content where the
// policy stored it.

import { api, ApiError } from "./api.js";
import { cachedBadge, DASH, errorNote, facts, fill, fmtEur, fmtMs, fmtNumber, fmtTime, h, s, statusBadge } from "./dom.js";
import { responsive } from "./charts.js";
import { renderMarkdown } from "./markdown.js";
import { checkReceipt, downloadHref } from "./receipt.js";

const ENDED = {
  cancelled: "the client hung up",
  failed: "the call failed",
  interrupted: "the gateway stopped during the call",
  in_progress: "the call is still running",
};
const OUTCOME_COLORS = { served: "#15803d", failed: "#b91c1c", cancelled: "#b45309", pending: "#4b5563" };

export async function render(ctx, main, { id }) {
  let trace;
  try {
    trace = await api(`v1/platform/traces/${encodeURIComponent(id)}`);
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 404) throw error;
    main.replaceChildren(h("h1", { tabIndex: -1 }, "Trace not found"), errorNote(error), backLink());
    return;
  }
  const { timings, routing, usage } = trace;
  const total = timings.finished_at != null ? (timings.finished_at - timings.received_at) * 1000 : null;
  fill(
    main,
    backLink(),
    h("h1", { tabIndex: -1, className: "trace-title" }, "Trace ", h("code", null, trace.id), " ", statusBadge(trace.status), trace.cached ? " " : null, cachedBadge(trace)),
    trace.error ? errorBox(trace.error) : null,
    h(
      "div",
      { className: "trace-grid" },
      section("Call", facts([
        ["Received", fmtTime(timings.received_at)],
        ["Route", trace.route],
        ["Model asked for", trace.request_model],
        ["Streamed", trace.stream ? "yes" : "no"],
        ["Key", trace.key_id],
        ["Finish reason", trace.finish_reason],
      ])),
      section("Where it ran", facts([
        ["Policy", routing.policy_id],
        ...(trace.mcp
          ? [["MCP tool server", trace.mcp.server], ["Tool", trace.mcp.tool]]
          : [["Endpoint", routing.endpoint_id]]),
        ["Provider", routing.provider],
        ...(trace.mcp ? [] : [["Model used", routing.model_used ? `${routing.model_used}${routing.model_version ? ` (${routing.model_version})` : ""}` : trace.status === "rejected" ? "none: the call was rejected" : null]]),
        ["Region", routing.inference_region],
        ["Sovereignty class", routing.sovereignty_class ? h("span", { className: `badge class-${routing.sovereignty_class}` }, routing.sovereignty_class) : null],
        ["Retention", routing.retention],
      ])),
      section("Timings", facts([
        ["Time to first token", fmtMs(timings.ttft_ms)],
        ["Time per output token", fmtMs(timings.tpot_ms)],
        ["Total", fmtMs(total)],
        ["Finished", fmtTime(timings.finished_at)],
      ])),
      trace.mcp
        ? section("Tool call", facts([
            ["Sent to the server", trace.mcp.bytes_in == null ? DASH : `${fmtNumber(trace.mcp.bytes_in)} bytes`],
            ["Answered", trace.mcp.bytes_out == null ? DASH : `${fmtNumber(trace.mcp.bytes_out)} bytes`],
          ]))
        : section("Tokens and cost", facts([
            ["Input tokens", fmtNumber(usage.input_tokens)],
            ["Output tokens", fmtNumber(usage.output_tokens)],
            ["Counted by", usage.input_tokens == null ? DASH : usage.estimated ? "the gateway (estimated)" : "the upstream (reported)"],
            ["Cost", fmtEur(usage.cost_eur)],
            ...(trace.cached
              ? [
                  ["Answered from the cache", h("a", { href: `#/traces/${encodeURIComponent(trace.cache.source_trace_id)}` }, `${trace.cache.kind} match of ${trace.cache.source_trace_id}`)],
                  ["Saved", fmtEur(trace.cache.saved_eur)],
                ]
              : []),
          ])),
    ),
    section("Attempts", attemptsView(trace), "card wide", "trace-attempts"),
    section("Content", contentView(trace), "card wide", "trace-content"),
    section("Receipt", receiptView(trace), "card wide", "trace-receipt"),
  );
}

/** The receipt's verification status, filled in once checked, and its download. */
function receiptView(trace) {
  if (trace.status === "in_progress") return h("p", { className: "muted" }, "A receipt is signed once the call has ended.");
  const status = h("p", { id: "receipt-status", role: "status" }, "Checking the signed receipt…");
  const view = h("div", null, status);
  checkReceipt(trace).then(
    (checked) => {
      const label = { valid: "Signature valid", invalid: "Signature invalid", unchecked: "Not checked" }[checked.state];
      status.replaceChildren(
        h("span", { className: `badge receipt-${checked.state}` }, label),
        ` ${checked.reason}`,
      );
      view.append(
        h("p", null, h("a", { href: downloadHref(checked.receipt), download: `${trace.id}.jws` }, "Download receipt (JWS)"),
          " · verify offline with ", h("code", null, "llmeu receipt verify"), " or any JOSE library"),
      );
    },
    (error) => status.replaceChildren(`The receipt could not be fetched: ${error.message}`),
  );
  return view;
}

function backLink() {
  return h("p", { className: "back" }, h("a", { href: "#/traces" }, "← All traces"));
}

let sectionCount = 0;
function section(title, body, className = "card", id) {
  sectionCount += 1;
  const titleId = `trace-section-${sectionCount}`;
  return h("section", { className, id, "aria-labelledby": titleId }, h("h2", { id: titleId }, title), body);
}

function errorBox(error) {
  return h(
    "div",
    { className: "card error-box", role: "note" },
    h("strong", null, `${error.type ?? "error"}${error.code ? ` · ${error.code}` : ""}${error.http_status ? ` · HTTP ${error.http_status}` : ""}`),
    h("p", null, error.message),
  );
}

/** The endpoints tried, in order, on a timeline from the call's arrival, then those excluded. */
function attemptsView(trace) {
  const attempts = trace.attempts ?? [];
  const excluded = trace.excluded ?? [];
  const start = trace.timings.received_at;
  const end = Math.max(
    trace.timings.finished_at ?? start,
    ...attempts.map((a) => a.finished_at ?? a.started_at),
  );
  const children = [];
  if (attempts.length) {
    children.push(timeline(trace, attempts, start, end));
    children.push(
      h(
        "ol",
        { className: "attempts" },
        attempts.map((a, i) =>
          h(
            "li",
            { className: `attempt outcome-${a.outcome}` },
            h("span", { className: `badge outcome-${a.outcome}` }, a.outcome),
            " ",
            h("strong", null, a.endpoint_id),
            ` (${a.provider}) — admitted by policy ${trace.routing.policy_id ?? ""}, tried ${i === 0 ? "first" : `after ${i} failure${i > 1 ? "s" : ""}`}`,
            `; started ${fmtMs((a.started_at - start) * 1000)} after arrival`,
            a.finished_at != null ? `, took ${fmtMs((a.finished_at - a.started_at) * 1000)}` : "",
            a.upstream_status != null ? `, upstream HTTP ${a.upstream_status}` : "",
            a.error ? h("div", { className: "attempt-error" }, a.error) : null,
          ),
        ),
      ),
    );
  } else {
    children.push(h("p", { className: "empty" }, "No endpoint was tried."));
  }
  children.push(
    h("h3", null, "Excluded by the policy"),
    excluded.length
      ? h(
          "ul",
          { className: "excluded" },
          excluded.map((x) => h("li", null, h("strong", null, x.endpoint_id), " — ", h("code", null, x.rule), `: ${x.reason}`)),
        )
      : h("p", { className: "empty" }, "No endpoint serving this model was excluded."),
  );
  return h("div", null, children);
}

function timeline(trace, attempts, start, end) {
  const span = Math.max(end - start, 0.001);
  const lanes = [{ label: "whole call", from: start, to: trace.timings.finished_at ?? end, color: "#1d4ed8", outcome: trace.status }].concat(
    attempts.map((a) => ({ label: a.endpoint_id, from: a.started_at, to: a.finished_at ?? end, color: OUTCOME_COLORS[a.outcome] ?? "#4b5563", outcome: a.outcome })),
  );
  const rowH = 28;
  const height = lanes.length * rowH + 26;
  const label = `Timeline over ${fmtMs(span * 1000)}: ${lanes.slice(1).map((l) => `${l.label} ${l.outcome} after ${fmtMs((l.to - l.from) * 1000)}`).join(", ")}`;
  const chart = responsive(h("div", { className: "chart" }), (width) => {
    const labelW = Math.min(200, Math.floor(width * 0.32));
    const plotW = width - labelW - 8;
    const x = (t) => labelW + ((t - start) / span) * plotW;
    const svg = s("svg", { width, height, role: "img", "aria-label": label, class: "chart-svg timeline" });
    lanes.forEach((lane, i) => {
      const top = i * rowH + 4;
      svg.append(
        s("text", { x: labelW - 8, y: top + 15, "text-anchor": "end", class: "axis label", "font-size": 12 }, clip(lane.label, (labelW - 8) / 7)),
        s(
          "rect",
          { x: x(lane.from), y: top, width: Math.max(2, x(lane.to) - x(lane.from)), height: rowH - 8, rx: 3, fill: lane.color },
          s("title", null, `${lane.label} (${lane.outcome}): ${fmtMs((lane.to - lane.from) * 1000)}`),
        ),
      );
    });
    if (trace.timings.first_token_at != null) {
      const fx = x(trace.timings.first_token_at);
      svg.append(
        s("line", { x1: fx, x2: fx, y1: 0, y2: height - 22, class: "first-token" }, s("title", null, `first token after ${fmtMs(trace.timings.ttft_ms)}`)),
      );
    }
    svg.append(
      s("text", { x: labelW, y: height - 6, class: "axis", "font-size": 12 }, "0 ms"),
      s("text", { x: width - 2, y: height - 6, class: "axis", "text-anchor": "end", "font-size": 12 }, fmtMs(span * 1000)),
    );
    return svg;
  });
  const key = h(
    "p",
    { className: "hint" },
    "Bars run from when the gateway received the call; ",
    trace.timings.first_token_at != null ? "the dashed line is the first token; " : "",
    "green served, red failed, amber cancelled.",
  );
  return h("div", { className: "timeline-wrap" }, chart, key);
}

function clip(text, chars) {
  const max = Math.max(6, Math.floor(chars));
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function contentView(trace) {
  const content = trace.content ?? {};
  if (!content.stored) {
    return h(
      "p",
      { className: "empty" },
      `Not stored: the policy ${trace.routing.policy_id ?? ""} keeps no prompts or answers in the gateway (or their retention ran out). Metadata stays.`,
    );
  }
  const prompt = Array.isArray(content.prompt) ? content.prompt : [];
  return h(
    "div",
    null,
    h("p", { className: "hint" }, `Kept until ${fmtTime(content.expires_at)}.`),
    h("h3", null, "Prompt"),
    h(
      "ol",
      { className: "messages" },
      prompt.map((m) => h("li", null, h("span", { className: "role" }, m.role ?? "?"), h("pre", { className: "message-text" }, messageText(m.content)))),
    ),
    h("h3", null, trace.status === "completed" ? "Answer" : "Answer (as far as it got)"),
    completionView(trace, content.completion),
  );
}

function messageText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => part.text ?? `[${part.type}]`).join("\n");
  return content == null ? "" : JSON.stringify(content, null, 2);
}

/** The stored output: answer text as Markdown; tool calls (stored as JSON) as JSON. */
function completionView(trace, completion) {
  if (completion == null || completion === "") return h("p", { className: "empty" }, "No answer text.");
  if (completion.startsWith("{")) {
    try {
      const output = JSON.parse(completion);
      if (output && Array.isArray(output.tool_calls)) {
        return h("pre", { className: "message-text" }, JSON.stringify(output, null, 2));
      }
    } catch {
      // plain text that happens to start with a brace
    }
  }
  if (trace.status === "completed") return h("div", { className: "answer markdown complete" }, renderMarkdown(completion));
  return h(
    "div",
    null,
    h("p", { className: "incomplete-label" }, `Incomplete answer: ${ENDED[trace.status] ?? `the call ended ${trace.status}`}.`),
    h("div", { className: "answer markdown incomplete" }, renderMarkdown(completion)),
  );
}
