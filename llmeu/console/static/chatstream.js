// Folding a chat-completion event stream into one result, as llmeu/client does.
//
// The rules of llmeu/client/_assembler.py, so that the console never shows a
// broken stream as a full answer:
// - only `message` events carry chunks; `event: error` is an error; other
//   event types and blank data are ignored;
// - `[DONE]` is an exact match of the data; whatever follows it is ignored;
// - the first error ends the fold (an `{"error": …}` payload, with its
//   `llmeu` block, or an `event: error`); a `[DONE]` after it changes nothing;
// - a frame that is not a JSON object ends the fold as malformed;
// - text of choice 0 is joined in order; `finish_reason` is the last non-null
//   one, `usage` and `llmeu` the last that arrived (null when none: never 0).
// A stream that ends without `[DONE]` is incomplete.

import { SSEDecoder } from "./sse.js";

export class ChatStreamAssembler {
  constructor() {
    this.state = "open"; // open | done | error | malformed
    this.content = [];
    this.finishReason = null;
    this.usage = null;
    this.llmeu = null;
    this.error = null;
    this.id = null;
    this.model = null;
    this.malformed = null;
  }

  get ended() {
    return this.state !== "open";
  }

  /** Fold one event in; returns the content text it carried ("" when none). */
  fold(event) {
    if (this.state !== "open") return "";
    if (event.event === "error") {
      this.fail(errorEventPayload(event.data));
      return "";
    }
    if (event.event !== "message" || !event.data.trim()) return "";
    if (event.data === "[DONE]") {
      this.state = "done";
      return "";
    }
    let chunk;
    try {
      chunk = JSON.parse(event.data);
    } catch (error) {
      return this.reject(event.data, `a frame is not JSON (${error.message})`);
    }
    if (chunk === null || typeof chunk !== "object" || Array.isArray(chunk)) {
      return this.reject(event.data, "a frame is not a chat-completion chunk");
    }
    if (chunk.llmeu != null) this.llmeu = chunk.llmeu;
    if (chunk.error != null) {
      this.fail(chunk.error);
      return "";
    }
    return this.foldChunk(chunk);
  }

  foldChunk(chunk) {
    if (chunk.id != null && this.id === null) this.id = chunk.id;
    if (chunk.model != null) this.model = chunk.model;
    if (chunk.usage != null) this.usage = chunk.usage;
    if (chunk.choices != null && !Array.isArray(chunk.choices)) {
      return this.reject(JSON.stringify(chunk), "a frame's `choices` is not a list");
    }
    let text = "";
    for (const choice of chunk.choices || []) {
      if ((choice.index ?? 0) !== 0) continue;
      if (choice.finish_reason != null) this.finishReason = choice.finish_reason;
      const content = choice.delta?.content;
      if (content != null && typeof content !== "string") {
        return this.reject(JSON.stringify(chunk), "a delta's `content` is not text");
      }
      if (content) {
        this.content.push(content);
        text += content;
      }
    }
    return text;
  }

  fail(payload) {
    this.error = errorInfo(payload);
    this.state = "error";
  }

  reject(data, message) {
    this.malformed = { data, message };
    this.state = "malformed";
    return "";
  }

  /** What arrived so far, and whether it is a whole answer (`complete`). */
  result() {
    let problem = null;
    if (this.state === "error") problem = this.error.message;
    else if (this.state === "malformed") problem = this.malformed.message;
    else if (this.state === "open") problem = "the stream ended without [DONE]";
    return {
      content: this.content.join(""),
      finishReason: this.finishReason,
      usage: this.usage,
      llmeu: this.llmeu,
      error: this.error,
      id: this.id,
      model: this.model,
      complete: this.state === "done",
      state: this.state,
      problem,
    };
  }
}

function errorInfo(payload) {
  if (payload !== null && typeof payload === "object" && !Array.isArray(payload)) {
    return {
      message: String(payload.message ?? "the server reported an error"),
      type: payload.type ?? null,
      code: payload.code ?? null,
    };
  }
  return { message: String(payload), type: null, code: null };
}

function errorEventPayload(data) {
  try {
    const payload = JSON.parse(data);
    if (payload !== null && typeof payload === "object" && payload.error != null) {
      return payload.error;
    }
    return payload;
  } catch {
    return data || "the server sent an error event";
  }
}

/**
 * Timings on the console's side of the wire, as llmeu/client/_timings.py:
 * the clock starts when the request is sent; "first content" is the first
 * frame carrying text (not the role frame, not metadata); TPOT is the time
 * from the first to the last content frame over the tokens after the first,
 * each content frame counting as one token until the server reports usage.
 */
export class TimingRecorder {
  constructor(clock = () => performance.now()) {
    this.clock = clock;
    this.start = clock();
    this.first = null;
    this.last = null;
    this.frames = 0;
  }

  content() {
    const now = this.clock();
    if (this.first === null) this.first = now;
    this.last = now;
    this.frames += 1;
  }

  /** Milliseconds; `tokens` is the server's completion_tokens when it sent them. */
  snapshot(tokens = null) {
    const count = tokens ?? (this.frames || null);
    const ttft = this.first === null ? null : this.first - this.start;
    const tpot =
      this.first === null || count === null || count < 2
        ? null
        : (this.last - this.first) / (count - 1);
    return { ttft, tpot, tokens: count, estimated: tokens === null, elapsed: this.clock() - this.start };
  }
}

/**
 * Read a fetch Response body as a chat stream. `onText(text)` is called for
 * every content delta as it arrives. Resolves to the assembler's result;
 * an aborted read resolves with `aborted: true` (and what arrived so far).
 */
export async function readChatStream(response, { onText = () => {}, onFrame = () => {} } = {}) {
  const decoder = new SSEDecoder();
  const assembler = new ChatStreamAssembler();
  const reader = response.body.getReader();
  let aborted = false;
  let broken = null;
  const take = (events) => {
    for (const event of events) {
      const text = assembler.fold(event);
      onFrame(event);
      if (text) onText(text);
    }
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      take(decoder.feed(value));
      if (assembler.ended) break;
    }
    if (!assembler.ended) take(decoder.close());
  } catch (error) {
    // A Stop aborts the read; a dropped connection fails it. Either way the
    // answer is what arrived, and it is not complete.
    if (error?.name === "AbortError") aborted = true;
    else broken = `the connection broke (${error?.message ?? error})`;
  } finally {
    if (assembler.ended) reader.cancel().catch(() => {});
  }
  const result = assembler.result();
  if (broken !== null && !result.complete && result.state === "open") result.problem = broken;
  return { ...result, aborted };
}
