// Markdown for a streaming answer: how much to show, and how to show it.
//
// splitMarkdown() is llmeu/client/markdown.py line for line (the tests run the
// Python cases against it, and compare the two on generated text): it cuts
// the not-yet-settled text into `settled` (whole blocks that more text cannot
// change: render once, never again), `live` (the block being written, safe to
// render now) and `held` (a tail that would render differently once finished:
// an open code fence being typed, a table row before its delimiter row, an
// unfinished link, code span or strong emphasis, a line that may still become
// a rule, heading or list). Showing `held` early is what makes a layout jump.
//
// renderMarkdown() builds DOM nodes (never HTML strings), so the text of an
// answer can never inject markup; links are kept only for http(s) and mailto.

export const MAX_INLINE_HOLD = 200;

const FENCE_OPEN = /^ {0,3}(`{3,}|~{3,})/;
const FENCE_PREFIX = /^ {0,3}(?:`{1,2}|~{1,2})$/;
const MARKER_ONLY = /^ {0,3}(?:[-=*_+ ]+|#{1,6}|\d{1,9}[.)]?)$/;
const TABLE_DELIMITER = /^ {0,3}\|?(?: *:?-+:? *\|)+ *(?::?-+:? *)?$/;
const LIST_ITEM = /^ {0,3}(?:[-*+]|\d{1,9}[.)])(?: |$)/;

const isSpace = (ch) => ch !== undefined && ch !== "" && ch.trim() === "";

export function splitMarkdown(text) {
  const lastNewline = text.lastIndexOf("\n");
  const finished = text.slice(0, lastNewline + 1);
  const lastLine = text.slice(lastNewline + 1);
  const scan = scanFinishedLines(finished, lastLine);
  const holdAt = holdPosition(finished, lastLine, scan);
  const settleAt = Math.min(scan.settleAt, holdAt);
  return {
    settled: text.slice(0, settleAt),
    live: text.slice(settleAt, holdAt),
    held: text.slice(holdAt),
  };
}

function scanFinishedLines(finished, lastLine) {
  const scan = { fence: null, settleAt: 0, tableStart: null, tableHasDelimiter: false, blockIsList: false };
  const lines = finished.split("\n").slice(0, -1);
  let offset = 0;
  let blankBefore = false;
  lines.forEach((line, number) => {
    const start = offset;
    offset += line.length + 1;
    if (scan.fence !== null) {
      if (closesFence(line, scan.fence)) scan.fence = null;
      return;
    }
    if (!line.trim()) {
      blankBefore = true;
      scan.tableStart = null;
      return;
    }
    if (blankBefore) maybeSettle(scan, start, line);
    else if (number === 0) scan.blockIsList = LIST_ITEM.test(line);
    blankBefore = false;
    const opener = FENCE_OPEN.exec(line);
    if (opener !== null) {
      scan.fence = opener[1];
      scan.tableStart = null;
    } else if (line.trimStart().startsWith("|")) {
      if (scan.tableStart === null) {
        scan.tableStart = start;
        scan.tableHasDelimiter = false;
      } else if (TABLE_DELIMITER.test(line)) {
        scan.tableHasDelimiter = true;
      }
    } else {
      scan.tableStart = null;
    }
  });
  if (blankBefore && scan.fence === null && lastLine.slice(0, 1).trim()) {
    maybeSettle(scan, finished.length, lastLine);
  }
  return scan;
}

// A block that starts at column 0 after a blank line ends the blocks before it.
function maybeSettle(scan, start, line) {
  if (isSpace(line[0])) return;
  const isList = LIST_ITEM.test(line);
  if (scan.blockIsList && isList) return;
  scan.settleAt = start;
  scan.blockIsList = isList;
}

function closesFence(line, fence) {
  const stripped = line.trim();
  const indent = line.length - line.replace(/^ +/, "").length;
  return indent <= 3 && stripped.length >= fence.length && allOf(stripped, fence[0]);
}

const allOf = (text, char) => text.length > 0 && [...text].every((c) => c === char);

function holdPosition(finished, lastLine, scan) {
  const end = finished.length + lastLine.length;
  const lineStart = finished.length;
  if (scan.fence !== null) {
    // Inside a code block only a closing fence being typed could jump.
    return allOf(lastLine.trim(), scan.fence[0]) ? lineStart : end;
  }
  // A header row is plain text until the delimiter row makes it a table.
  if (scan.tableStart !== null && !scan.tableHasDelimiter) return scan.tableStart;
  if (!lastLine) return end;
  if (isBlockPrefix(lastLine)) return lineStart;
  const inline = unfinishedInline(lastLine);
  if (inline !== null && lastLine.length - inline <= MAX_INLINE_HOLD) return lineStart + inline;
  return end;
}

// A line start that may still become a fence, a table row, a rule, a heading or a list.
function isBlockPrefix(line) {
  if (FENCE_OPEN.test(line) || FENCE_PREFIX.test(line)) return true;
  if (line.trimStart().startsWith("|")) return true;
  return MARKER_ONLY.test(line);
}

// The offset of the earliest unfinished code span, link or strong emphasis, if any.
function unfinishedInline(line) {
  let codeOpen = null;
  const brackets = [];
  let strong = null;
  let linkOpen = null;
  let i = 0;
  while (i < line.length) {
    const char = line[i];
    if (char === "`") {
      let run = 0;
      while (line[i + run] === "`") run += 1;
      if (codeOpen === null) codeOpen = [i, run];
      else if (codeOpen[1] === run) codeOpen = null;
      i += run;
      continue;
    }
    if (codeOpen !== null) {
      i += 1;
      continue;
    }
    if (char === "\\") {
      i += 2;
      continue;
    }
    if (linkOpen !== null) {
      if (char === ")") linkOpen = null;
    } else if (char === "[") {
      brackets.push(i > 0 && line[i - 1] === "!" ? i - 1 : i);
    } else if (char === "]" && brackets.length) {
      const opened = brackets.pop();
      if (i + 1 === line.length || line[i + 1] === "(") linkOpen = opened;
    } else if (line.startsWith("**", i)) {
      strong = strong === null ? i : null;
      i += 2;
      continue;
    }
    i += 1;
  }
  const candidates = [codeOpen ? codeOpen[0] : null, brackets.length ? brackets[0] : null, linkOpen, strong]
    .filter((p) => p !== null);
  return candidates.length ? Math.min(...candidates) : null;
}

// Rendering ------------------------------------------------------------------

const el = (tag, ...children) => {
  const node = document.createElement(tag);
  node.append(...children);
  return node;
};

const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$/;
const SETEXT = /^ {0,3}(=+|-+)[ \t]*$/;
const BULLET = /^( {0,3})([-*+]|(\d{1,9})[.)])(?:[ \t]+|$)/;
const QUOTE = /^ {0,3}> ?/;

/** A DocumentFragment for `text`; answer headings start at `<h3>` below the page's own. */
export function renderMarkdown(text) {
  const fragment = document.createDocumentFragment();
  renderBlocks(text.split("\n"), fragment);
  return fragment;
}

function renderBlocks(lines, parent) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i += 1;
      continue;
    }
    const fence = FENCE_OPEN.exec(line);
    if (fence) {
      i = renderFence(lines, i, fence[1], parent);
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      const level = Math.min(6, heading[1].length + 2);
      parent.append(inlineInto(el(`h${level}`), heading[2] ?? ""));
      i += 1;
      continue;
    }
    if (RULE.test(line)) {
      parent.append(el("hr"));
      i += 1;
      continue;
    }
    if (QUOTE.test(line)) {
      const inner = [];
      while (i < lines.length && lines[i].trim() && QUOTE.test(lines[i])) {
        inner.push(lines[i].replace(QUOTE, ""));
        i += 1;
      }
      const quote = el("blockquote");
      renderBlocks(inner, quote);
      parent.append(quote);
      continue;
    }
    if (BULLET.test(line)) {
      i = renderList(lines, i, parent);
      continue;
    }
    if (line.trimStart().startsWith("|") && i + 1 < lines.length && TABLE_DELIMITER.test(lines[i + 1])) {
      i = renderTable(lines, i, parent);
      continue;
    }
    i = renderParagraph(lines, i, parent);
  }
}

function renderFence(lines, start, fence, parent) {
  const info = lines[start].trim().slice(fence.length).trim().split(/\s+/)[0];
  const body = [];
  let i = start + 1;
  while (i < lines.length && !closesFence(lines[i], fence)) {
    body.push(lines[i]);
    i += 1;
  }
  const code = el("code", body.join("\n"));
  if (info) code.dataset.language = info;
  parent.append(el("pre", code));
  return i + 1;
}

function renderParagraph(lines, start, parent) {
  const text = [];
  let i = start;
  while (i < lines.length && lines[i].trim()) {
    const line = lines[i];
    if (text.length && SETEXT.test(line)) {
      const level = line.trim()[0] === "=" ? 3 : 4;
      parent.append(inlineInto(el(`h${level}`), text.join("\n")));
      return i + 1;
    }
    if (text.length && (FENCE_OPEN.test(line) || HEADING.test(line) || QUOTE.test(line) || RULE.test(line))) break;
    if (text.length && BULLET.test(line) && !/^ {4}/.test(line)) break;
    text.push(line.trim());
    i += 1;
  }
  parent.append(inlineInto(el("p"), text.join("\n")));
  return i;
}

function renderList(lines, start, parent) {
  const first = BULLET.exec(lines[start]);
  const ordered = first[3] !== undefined;
  const list = el(ordered ? "ol" : "ul");
  if (ordered && Number(first[3]) !== 1) list.start = Number(first[3]);
  let i = start;
  let loose = false;
  const items = [];
  while (i < lines.length) {
    const marker = BULLET.exec(lines[i]);
    if (!marker || (marker[3] !== undefined) !== ordered) break;
    const indent = marker[0].length;
    const body = [lines[i].slice(indent)];
    i += 1;
    while (i < lines.length) {
      const line = lines[i];
      if (!line.trim()) {
        // A blank line belongs to the item when indented content follows it.
        const next = lines[i + 1];
        if (next !== undefined && /^\s/.test(next) && next.trim()) {
          body.push("");
          loose = true;
          i += 1;
          continue;
        }
        if (next !== undefined && BULLET.test(next)) loose = true;
        break;
      }
      if (BULLET.exec(line) && !/^\s{2,}/.test(line)) break;
      body.push(line.replace(new RegExp(`^ {0,${indent}}`), ""));
      i += 1;
    }
    items.push(body);
    while (i < lines.length && !lines[i].trim() && lines[i + 1] !== undefined && BULLET.test(lines[i + 1])) i += 1;
  }
  for (const body of items) {
    const item = el("li");
    if (!loose && body.every((l) => l.trim()) && !body.slice(1).some((l) => BULLET.test(l) || FENCE_OPEN.test(l))) {
      inlineInto(item, body.map((l) => l.trim()).join("\n"));
    } else {
      renderBlocks(body, item);
    }
    list.append(item);
  }
  parent.append(list);
  return i;
}

function splitRow(line) {
  let text = line.trim();
  if (text.startsWith("|")) text = text.slice(1);
  if (text.endsWith("|") && !text.endsWith("\\|")) text = text.slice(0, -1);
  const cells = [];
  let cell = "";
  for (let i = 0; i < text.length; i += 1) {
    if (text[i] === "\\" && text[i + 1] === "|") {
      cell += "|";
      i += 1;
    } else if (text[i] === "|") {
      cells.push(cell.trim());
      cell = "";
    } else cell += text[i];
  }
  cells.push(cell.trim());
  return cells;
}

function renderTable(lines, start, parent) {
  const header = splitRow(lines[start]);
  const aligns = splitRow(lines[start + 1]).map((spec) => {
    const left = spec.startsWith(":");
    const right = spec.endsWith(":");
    return left && right ? "center" : right ? "right" : left ? "left" : null;
  });
  const row = (cells, tag) => {
    const tr = el("tr");
    header.forEach((_, column) => {
      const cell = inlineInto(el(tag), cells[column] ?? "");
      if (tag === "th") cell.scope = "col";
      if (aligns[column]) cell.className = `align-${aligns[column]}`;
      tr.append(cell);
    });
    return tr;
  };
  const body = el("tbody");
  let i = start + 2;
  while (i < lines.length && lines[i].trim() && lines[i].includes("|")) {
    body.append(row(splitRow(lines[i]), "td"));
    i += 1;
  }
  const table = el("table", el("thead", row(header, "th")), body);
  parent.append(el("div", table));
  parent.lastChild.className = "md-table";
  return i;
}

// Inline ------------------------------------------------------------------

const PUNCTUATION = /[!-/:-@[-`{-~]/;

function inlineInto(node, text) {
  node.append(...parseInline(text));
  return node;
}

function safeHref(url) {
  return /^(?:https?:\/\/|mailto:)/i.test(url) ? url : null;
}

function findClosingBracket(text, open) {
  let depth = 0;
  for (let i = open; i < text.length; i += 1) {
    if (text[i] === "\\") i += 1;
    else if (text[i] === "[") depth += 1;
    else if (text[i] === "]") {
      depth -= 1;
      if (depth === 0) return i;
    }
  }
  return -1;
}

function parseInline(text) {
  const nodes = [];
  let plain = "";
  const flush = () => {
    if (plain) nodes.push(document.createTextNode(plain));
    plain = "";
  };
  let i = 0;
  while (i < text.length) {
    const char = text[i];
    if (char === "\\" && PUNCTUATION.test(text[i + 1] ?? "")) {
      plain += text[i + 1];
      i += 2;
      continue;
    }
    if (char === "\n") {
      plain += " ";
      i += 1;
      continue;
    }
    if (char === "`") {
      let run = 0;
      while (text[i + run] === "`") run += 1;
      const fence = "`".repeat(run);
      let close = text.indexOf(fence, i + run);
      while (close !== -1 && text[close + run] === "`") close = text.indexOf(fence, close + run + 1);
      if (close === -1) {
        plain += fence;
        i += run;
        continue;
      }
      flush();
      let code = text.slice(i + run, close).replace(/\n/g, " ");
      if (code.length > 2 && code[0] === " " && code.at(-1) === " " && code.trim()) code = code.slice(1, -1);
      nodes.push(el("code", code));
      i = close + run;
      continue;
    }
    const image = char === "!" && text[i + 1] === "[";
    if (char === "[" || image) {
      const open = image ? i + 1 : i;
      const close = findClosingBracket(text, open);
      const paren = close === -1 ? null : /^\(\s*(<[^>]*>|[^\s()]*)(?:\s+"[^"]*")?\s*\)/.exec(text.slice(close + 1));
      if (paren) {
        flush();
        const label = text.slice(open + 1, close);
        const url = paren[1].replace(/^<|>$/g, "");
        const href = safeHref(url);
        if (href && !image) {
          const link = inlineInto(el("a"), label);
          link.href = href;
          link.rel = "noopener noreferrer";
          link.target = "_blank";
          nodes.push(link);
        } else {
          // Images are not loaded (the page fetches nothing from elsewhere): their text stays.
          nodes.push(...parseInline(label));
        }
        i = close + 1 + paren[0].length;
        continue;
      }
    }
    if (char === "<") {
      const auto = /^<((?:https?:\/\/|mailto:)[^\s<>]+)>/i.exec(text.slice(i));
      if (auto) {
        flush();
        const link = el("a", auto[1]);
        link.href = auto[1];
        link.rel = "noopener noreferrer";
        link.target = "_blank";
        nodes.push(link);
        i += auto[0].length;
        continue;
      }
    }
    const emphasis = matchEmphasis(text, i);
    if (emphasis) {
      flush();
      nodes.push(inlineInto(el(emphasis.tag), emphasis.inner));
      i = emphasis.end;
      continue;
    }
    plain += char;
    i += 1;
  }
  flush();
  return nodes;
}

const EMPHASIS = [
  ["**", "strong"],
  ["__", "strong"],
  ["~~", "del"],
  ["*", "em"],
  ["_", "em"],
];

function matchEmphasis(text, i) {
  for (const [marker, tag] of EMPHASIS) {
    if (!text.startsWith(marker, i)) continue;
    const after = text[i + marker.length];
    if (after === undefined || isSpace(after) || after === marker[0]) continue;
    // Underscores inside words (snake_case) are not emphasis.
    if (marker[0] === "_" && /\w/.test(text[i - 1] ?? "")) continue;
    let close = text.indexOf(marker, i + marker.length + 1);
    while (close !== -1) {
      const before = text[close - 1];
      const next = text[close + marker.length];
      const rightFlanking = !isSpace(before) && before !== "\\";
      const wordAfter = marker[0] === "_" && /\w/.test(next ?? "");
      const doubled = marker.length === 1 && next === marker;
      if (rightFlanking && !wordAfter && !doubled) {
        return { tag, inner: text.slice(i + marker.length, close), end: close + marker.length };
      }
      close = text.indexOf(marker, close + (doubled ? 2 : 1));
    }
  }
  return null;
}

/**
 * Renders a growing answer into `container` without layout jumps: settled
 * blocks are rendered once into their own element and never touched again;
 * the live block is rendered again on each update; the held tail waits.
 * `finish()` shows everything, held tail included (the stream is over).
 */
export class MarkdownView {
  constructor(container) {
    this.settled = el("div");
    this.live = el("div");
    this.live.className = "md-live";
    container.replaceChildren(this.settled, this.live);
    this.offset = 0;
    this.shown = "";
  }

  update(text) {
    const split = splitMarkdown(text.slice(this.offset));
    if (split.settled) {
      this.settled.append(renderMarkdown(split.settled));
      this.offset += split.settled.length;
    }
    this.live.replaceChildren(renderMarkdown(split.live));
    this.shown = text.slice(0, this.offset) + split.live;
    return split;
  }

  finish(text) {
    this.live.replaceChildren(renderMarkdown(text.slice(this.offset)));
    this.live.className = "";
    this.shown = text;
  }
}
