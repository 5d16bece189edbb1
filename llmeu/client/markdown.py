"""Deciding how much of a half-streamed Markdown answer to show.

A terminal renders the answer again on every delta. Some constructs render
one way while half-written and another once finished, and showing them early
makes the layout jump: a lone backtick becomes a code fence, `| a | b` becomes
a table once its delimiter row arrives, `[text](http://ex` becomes a link,
`---` under a paragraph turns it into a heading, `**bo` turns bold.
`split_markdown()` cuts the text received so far into three parts:

- `settled`: whole blocks followed by a blank line and the first character of
  the next block; more text cannot change how they render, so a viewer can
  print them once and forget them (keeping the live region small);
- `live`: the block being written, safe to render now;
- `held`: the tail that would render differently once finished; it is shown
  when it is finished, or when the stream ends (then nothing is held).

Inline constructs are held only within the last, unfinished line and for at
most `MAX_INLINE_HOLD` characters: a stray `**` in prose must not hide the
rest of a paragraph. List items are never settled apart from the list they
belong to, because a list rendered in pieces is spaced differently. The
functions are pure and work on the text not yet settled: the caller keeps the
offset of what it has printed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_INLINE_HOLD = 200
"""The longest unfinished inline construct (link, code span, strong) held back."""

_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})")
_FENCE_PREFIX = re.compile(r" {0,3}(`{1,2}|~{1,2})")
_MARKER_ONLY = re.compile(r" {0,3}(?:[-=*_+ ]+|#{1,6}|\d{1,9}[.)]?)")
_TABLE_DELIMITER = re.compile(r" {0,3}\|?(?: *:?-+:? *\|)+ *(?::?-+:? *)?")
_LIST_ITEM = re.compile(r" {0,3}(?:[-*+]|\d{1,9}[.)])(?: |$)")


@dataclass(frozen=True, slots=True)
class MarkdownSplit:
    """`settled + live + held` is the text that was split."""

    settled: str
    live: str
    held: str


@dataclass(slots=True)
class _Scan:
    """What a pass over the finished lines found."""

    fence: str | None = None
    settle_at: int = 0
    table_start: int | None = None
    table_has_delimiter: bool = False
    block_is_list: bool = False


def split_markdown(text: str) -> MarkdownSplit:
    """Split the not-yet-settled text of a streaming answer (see the module docstring)."""
    last_newline = text.rfind("\n")
    finished, last_line = text[: last_newline + 1], text[last_newline + 1 :]
    scan = _scan_finished_lines(finished, last_line)
    hold_at = _hold_position(finished, last_line, scan)
    settle_at = min(scan.settle_at, hold_at)
    return MarkdownSplit(text[:settle_at], text[settle_at:hold_at], text[hold_at:])


def _scan_finished_lines(finished: str, last_line: str) -> _Scan:
    scan = _Scan()
    lines = finished.split("\n")[:-1]
    offset = 0
    blank_before = False
    for number, line in enumerate(lines):
        start, offset = offset, offset + len(line) + 1
        if scan.fence is not None:
            if _closes_fence(line, scan.fence):
                scan.fence = None
            continue
        if not line.strip():
            blank_before = True
            scan.table_start = None
            continue
        if blank_before:
            _maybe_settle(scan, start, line)
        elif number == 0:
            scan.block_is_list = bool(_LIST_ITEM.match(line))
        blank_before = False
        opener = _FENCE_OPEN.match(line)
        if opener is not None:
            scan.fence = opener.group(1)
            scan.table_start = None
        elif line.lstrip().startswith("|"):
            if scan.table_start is None:
                scan.table_start, scan.table_has_delimiter = start, False
            elif _TABLE_DELIMITER.fullmatch(line):
                scan.table_has_delimiter = True
        else:
            scan.table_start = None
    if blank_before and scan.fence is None and last_line[:1].strip():
        _maybe_settle(scan, len(finished), last_line)
    return scan


def _maybe_settle(scan: _Scan, start: int, line: str) -> None:
    """A block that starts at column 0 after a blank line ends the blocks before it."""
    if line[:1].isspace():
        return
    is_list = bool(_LIST_ITEM.match(line))
    if scan.block_is_list and is_list:
        return
    scan.settle_at = start
    scan.block_is_list = is_list


def _closes_fence(line: str, fence: str) -> bool:
    stripped = line.strip()
    return (
        len(line) - len(line.lstrip(" ")) <= 3
        and len(stripped) >= len(fence)
        and set(stripped) == {fence[0]}
    )


def _hold_position(finished: str, last_line: str, scan: _Scan) -> int:
    """Where the held tail starts; `len(finished + last_line)` when nothing is held."""
    end = len(finished) + len(last_line)
    line_start = len(finished)
    if scan.fence is not None:
        # Inside a code block only a closing fence being typed could jump.
        stripped = last_line.strip()
        if stripped and set(stripped) == {scan.fence[0]}:
            return line_start
        return end
    if scan.table_start is not None and not scan.table_has_delimiter:
        # A header row is plain text until the delimiter row makes it a table.
        return scan.table_start
    if not last_line:
        return end
    if _is_block_prefix(last_line):
        return line_start
    inline = _unfinished_inline(last_line)
    if inline is not None and len(last_line) - inline <= MAX_INLINE_HOLD:
        return line_start + inline
    return end


def _is_block_prefix(line: str) -> bool:
    """A line start that may still become a fence, a table row, a rule, a heading or a list."""
    if _FENCE_OPEN.match(line) or _FENCE_PREFIX.fullmatch(line):
        return True
    if line.lstrip().startswith("|"):
        return True
    return _MARKER_ONLY.fullmatch(line) is not None


def _unfinished_inline(line: str) -> int | None:
    """The offset of the earliest unfinished code span, link or strong emphasis, if any."""
    code_open: tuple[int, int] | None = None
    brackets: list[int] = []
    strong: int | None = None
    link_open: int | None = None
    i = 0
    while i < len(line):
        char = line[i]
        if char == "`":
            run = len(line[i:]) - len(line[i:].lstrip("`"))
            if code_open is None:
                code_open = (i, run)
            elif code_open[1] == run:
                code_open = None
            i += run
            continue
        if code_open is not None:
            i += 1
            continue
        if char == "\\":
            i += 2
            continue
        if link_open is not None:
            if char == ")":
                link_open = None
        elif char == "[":
            brackets.append(i - 1 if i > 0 and line[i - 1] == "!" else i)
        elif char == "]" and brackets:
            opened = brackets.pop()
            if i + 1 == len(line) or line[i + 1] == "(":
                link_open = opened
        elif line.startswith("**", i):
            strong = i if strong is None else None
            i += 2
            continue
        i += 1
    candidates = [
        position
        for position in (
            code_open[0] if code_open else None,
            brackets[0] if brackets else None,
            link_open,
            strong,
        )
        if position is not None
    ]
    return min(candidates) if candidates else None
