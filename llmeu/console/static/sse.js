// An incremental event-stream decoder: bytes in, events out, no I/O.
//
// The same rules as llmeu/protocol/sse.py (the WHATWG event-stream parsing
// algorithm), so the console reads a stream exactly as the Python client does:
// UTF-8 decoded with replacement, a character split across reads kept whole
// (TextDecoder with {stream: true}); one leading BOM dropped; CRLF, LF and CR
// line endings, a CRLF split across reads counted once; comment lines; one
// space after the colon stripped; `data` lines joined with "\n"; no event for a
// block without `data`; the unterminated last event dropped at end of input;
// `retry` only when all ASCII digits; an `id` holding NUL ignored.

const LINE_END = /\r\n|\r|\n/g;

export class SSEDecoder {
  constructor() {
    // ignoreBOM keeps the BOM in the text so that the rule below drops exactly
    // one, as the Python decoder does, whatever the platform's default.
    this.decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
    this.buffer = "";
    this.started = false;
    this.skipLF = false;
    this.data = [];
    this.event = "";
    this.lastId = "";
    this.retry = null;
  }

  /** Decode one read (a Uint8Array); returns the events it completed, in order. */
  feed(bytes) {
    return this.consume(this.decoder.decode(bytes, { stream: true }));
  }

  /** End of input: flush the UTF-8 decoder; an unterminated event is dropped. */
  close() {
    const events = this.consume(this.decoder.decode());
    this.buffer = "";
    this.data = [];
    this.event = "";
    return events;
  }

  consume(text) {
    if (!text) return [];
    if (!this.started) {
      this.started = true;
      if (text[0] === "\ufeff") text = text.slice(1);
    }
    if (this.skipLF && text) {
      this.skipLF = false;
      if (text[0] === "\n") text = text.slice(1);
    }
    const buf = this.buffer + text;
    const events = [];
    let pos = 0;
    LINE_END.lastIndex = 0;
    for (;;) {
      const match = LINE_END.exec(buf);
      if (match === null) break;
      const line = buf.slice(pos, match.index);
      pos = match.index + match[0].length;
      // A CR at the very end may be the first half of a CRLF split across reads.
      if (pos === buf.length && buf[buf.length - 1] === "\r") this.skipLF = true;
      const event = this.processLine(line);
      if (event !== null) events.push(event);
    }
    this.buffer = buf.slice(pos);
    return events;
  }

  processLine(line) {
    if (line === "") return this.dispatch();
    if (line[0] === ":") return null;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value[0] === " ") value = value.slice(1);
    if (field === "data") this.data.push(value);
    else if (field === "event") this.event = value;
    else if (field === "id") {
      if (!value.includes("\0")) this.lastId = value;
    } else if (field === "retry" && /^[0-9]+$/.test(value)) this.retry = Number(value);
    return null;
  }

  dispatch() {
    if (this.data.length === 0) {
      this.event = "";
      return null;
    }
    const event = {
      event: this.event || "message",
      data: this.data.join("\n"),
      id: this.lastId,
      retry: this.retry,
    };
    this.data = [];
    this.event = "";
    return event;
  }
}
