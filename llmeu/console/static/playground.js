// The playground: send a prompt with a model and a policy the key may use,
// and watch the answer stream in.
//
// The stream is read with fetch and a ReadableStream (not EventSource, which
// cannot POST, cannot send the Authorization header and reconnects on its own)
// and parsed by sse.js + chatstream.js with the Python client's rules. Only an
// answer that ended with `[DONE]` is shown as complete; a stopped or broken
// one keeps its text but is marked incomplete. Stop aborts the fetch: the
// connection closes, and the gateway records the call as `cancelled`.

import { api, errorOf, send } from "./api.js";
import { ChatStreamAssembler, readChatStream, TimingRecorder } from "./chatstream.js";
import { DASH, facts, fill, fmtEur, fmtMs, fmtNumber, h } from "./dom.js";
import { MarkdownView } from "./markdown.js";
import { usablePolicies } from "./policy.js";

export async function render(ctx, main) {
  const policies = usablePolicies(ctx.me.policy_id, ctx.policies);
  const modelSelect = h("select", { id: "pg-model", name: "model", required: true });
  const policySelect = h(
    "select",
    { id: "pg-policy", name: "policy", "aria-describedby": "pg-policy-hint" },
    policies.map((p) =>
      h("option", { value: p.policy_id }, p.policy_id === ctx.me.policy_id ? `${p.policy_id} (your key's)` : p.policy_id),
    ),
  );
  const prompt = h("textarea", {
    id: "pg-prompt",
    name: "prompt",
    rows: 4,
    required: true,
    placeholder: "Ask something…",
    "aria-describedby": "pg-prompt-hint",
  });
  const sendButton = h("button", { type: "submit", className: "primary" }, "Send");
  const stopButton = h("button", { type: "button", disabled: true }, "Stop");
  const modelNote = h("p", { className: "hint", id: "pg-model-note", "aria-live": "polite" });

  const stats = {
    ttft: h("dd", null, DASH),
    tpot: h("dd", null, DASH),
    tokens: h("dd", null, DASH),
    elapsed: h("dd", null, DASH),
  };
  const statsList = h(
    "dl",
    { className: "live-stats", "aria-label": "Timings" },
    [["TTFT", stats.ttft], ["TPOT", stats.tpot], ["Tokens", stats.tokens], ["Elapsed", stats.elapsed]].map(([term, dd]) =>
      h("div", null, h("dt", null, term), dd),
    ),
  );
  const status = h("p", { className: "stream-status", role: "status", "aria-live": "polite" }, "Nothing sent yet.");
  const answer = h("div", { className: "answer markdown", id: "pg-answer", "aria-label": "Answer", role: "region" });
  // A real element, not CSS content: it is read out and copied with the text.
  const incompleteLabel = h("p", { className: "incomplete-label", hidden: true }, "Incomplete answer: this is not the whole reply.");
  const routing = h("div", { className: "routing-block" });

  const form = h(
    "form",
    { className: "card playground-form", method: "post", "aria-label": "Send a prompt" },
    h(
      "div",
      { className: "field-row" },
      h("div", { className: "field" }, h("label", { htmlFor: "pg-model" }, "Model"), modelSelect, modelNote),
      h(
        "div",
        { className: "field" },
        h("label", { htmlFor: "pg-policy" }, "Policy"),
        policySelect,
        h("p", { className: "hint", id: "pg-policy-hint" }, `Your key's policy, or one at least as strict.`),
      ),
    ),
    h(
      "div",
      { className: "field" },
      h("label", { htmlFor: "pg-prompt" }, "Prompt"),
      prompt,
      h("p", { className: "hint", id: "pg-prompt-hint" }, "Ctrl+Enter sends."),
    ),
    h("div", { className: "actions" }, sendButton, stopButton),
  );

  main.replaceChildren(
    h("h1", { tabIndex: -1 }, "Playground"),
    form,
    h(
      "section",
      { className: "card answer-card", "aria-labelledby": "pg-answer-title" },
      h("div", { className: "answer-head" }, h("h2", { id: "pg-answer-title" }, "Answer"), statsList),
      status,
      incompleteLabel,
      answer,
      routing,
    ),
  );

  async function loadModels() {
    modelNote.textContent = "";
    const previous = modelSelect.value;
    let models = [];
    try {
      // The models reachable under the chosen policy, not only the key's.
      const list = await api("v1/models", { headers: { "x-llmeu-policy": policySelect.value } });
      models = list.data.filter((m) => m.llmeu?.capabilities?.includes("chat"));
    } catch (error) {
      modelNote.textContent = error.message;
    }
    modelSelect.replaceChildren(
      ...models.map((m) => h("option", { value: m.id }, `${m.id} — ${m.llmeu.sovereignty_classes.join(", ")}`)),
    );
    if (models.some((m) => m.id === previous)) modelSelect.value = previous;
    if (!models.length && !modelNote.textContent) modelNote.textContent = "No chat model is reachable under this policy.";
    sendButton.disabled = !models.length;
  }
  policySelect.addEventListener("change", loadModels);
  await loadModels();

  let controller = null;
  let frame = 0;

  function showStats(timings, tokens) {
    const snap = timings.snapshot(tokens);
    stats.ttft.textContent = fmtMs(snap.ttft);
    stats.tpot.textContent = fmtMs(snap.tpot);
    // Until the server reports usage, each content frame counts as one token.
    stats.tokens.textContent = snap.tokens === null ? DASH : `${fmtNumber(snap.tokens)}${snap.estimated ? " est." : ""}`;
    stats.elapsed.textContent = fmtMs(snap.elapsed);
  }

  async function run() {
    controller = new AbortController();
    const timings = new TimingRecorder();
    const view = new MarkdownView(answer);
    let text = "";
    answer.className = "answer markdown streaming";
    answer.setAttribute("aria-busy", "true");
    incompleteLabel.hidden = true;
    routing.replaceChildren();
    status.textContent = "Waiting for the first token…";
    sendButton.disabled = true;
    stopButton.disabled = false;
    // One render per animation frame at most, however fast the deltas come,
    // and none when nothing new arrived.
    let rendered = null;
    const tick = () => {
      if (text !== rendered) {
        view.update(text);
        rendered = text;
      }
      showStats(timings, null);
      frame = requestAnimationFrame(tick);
    };
    frame = requestAnimationFrame(tick);
    const body = {
      model: modelSelect.value,
      messages: [{ role: "user", content: prompt.value }],
      stream: true,
      stream_options: { include_usage: true },
      llmeu: { policy_id: policySelect.value },
    };
    let result;
    let traceId = null;
    try {
      const response = await send("v1/chat/completions", { method: "POST", body, signal: controller.signal });
      traceId = response.headers.get("x-llmeu-trace-id");
      if (!response.ok) {
        const error = await errorOf(response);
        traceId = traceId ?? error.traceId;
        result = { ...new ChatStreamAssembler().result(), problem: error.message, refused: error };
      } else {
        status.textContent = "Streaming…";
        result = await readChatStream(response, {
          onText: (delta) => {
            timings.content();
            text += delta;
          },
        });
      }
    } catch (error) {
      result = { ...new ChatStreamAssembler().result(), aborted: error?.name === "AbortError", problem: error.message };
    } finally {
      cancelAnimationFrame(frame);
      controller = null;
      sendButton.disabled = false;
      stopButton.disabled = true;
    }
    finish(result, view, timings, traceId ?? result.llmeu?.trace_id ?? null);
  }

  function finish(result, view, timings, traceId) {
    view.finish(result.content);
    answer.removeAttribute("aria-busy");
    showStats(timings, result.usage?.completion_tokens ?? null);
    const traceLink = traceId ? h("a", { href: `#/traces/${encodeURIComponent(traceId)}` }, `Open trace ${traceId}`) : null;
    if (result.complete) {
      answer.className = "answer markdown complete";
      status.replaceChildren(h("span", { className: "badge status-completed" }, "complete"), ` finish reason: ${result.finishReason ?? DASH}`);
    } else {
      answer.className = "answer markdown incomplete";
      incompleteLabel.hidden = false;
      const label = result.aborted ? "stopped" : result.refused ? "refused" : "incomplete";
      const why = result.aborted
        ? "You stopped this answer; the gateway records the call as cancelled."
        : result.problem;
      status.replaceChildren(h("span", { className: `badge status-${result.aborted ? "cancelled" : "failed"}` }, label), ` ${why}`);
      if (result.refused?.details?.length) {
        status.append(h("ul", { className: "reasons" }, result.refused.details.map((d) => h("li", null, `${d.endpoint_id}: ${d.reason}`))));
      }
    }
    fill(
      routing,
      result.llmeu?.provider ? routingFacts(result.llmeu) : null,
      traceLink ? h("p", { className: "trace-link" }, traceLink) : null,
    );
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!controller && prompt.value.trim()) run();
  });
  prompt.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  stopButton.addEventListener("click", () => controller?.abort());
  return () => {
    controller?.abort();
    cancelAnimationFrame(frame);
  };
}

/** The `llmeu` routing block: where the call ran and what it cost. */
export function routingFacts(block) {
  const cost = block.cost_estimate ?? {};
  const tokens = `${fmtNumber(cost.input_tokens)} in · ${fmtNumber(cost.output_tokens)} out${cost.estimated ? " (estimated)" : ""}`;
  return h(
    "section",
    { "aria-labelledby": "pg-routing-title" },
    h("h3", { id: "pg-routing-title" }, "Where it ran"),
    facts([
      ["Provider", block.provider],
      ["Endpoint", block.endpoint_id],
      ["Model", block.model_version ? `${block.model_used} (${block.model_version})` : block.model_used],
      ["Region", block.inference_region],
      ["Sovereignty class", h("span", { className: `badge class-${block.sovereignty_class}` }, block.sovereignty_class)],
      ["Policy", block.policy_id],
      ["Retention", block.retention],
      ["Cost", `${fmtEur(cost.amount)} · ${tokens}`],
    ]),
  );
}
