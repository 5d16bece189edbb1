"""What a streaming Markdown answer shows at each moment: settled, live, held."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmeu.client.markdown import MAX_INLINE_HOLD, MarkdownSplit, split_markdown

CASES = [
    # plain prose streams as it comes
    pytest.param("Hello wor", "", "Hello wor", "", id="prose-streams"),
    pytest.param("", "", "", "", id="empty"),
    pytest.param("one\ntwo", "", "one\ntwo", "", id="lines-of-a-paragraph"),
    # blocks settle after a blank line and the start of the next block
    pytest.param("One.\n\nTwo", "One.\n\n", "Two", "", id="paragraph-settles"),
    pytest.param("One.\n\n", "", "One.\n\n", "", id="not-before-the-next-block-starts"),
    pytest.param("One.\n\n  indented", "", "One.\n\n  indented", "", id="indented-continues"),
    pytest.param("- a\n\n- b", "", "- a\n\n- b", "", id="list-items-stay-together"),
    pytest.param("- a\n\n- b\n\nEnd", "- a\n\n- b\n\n", "End", "", id="list-settles-as-one"),
    pytest.param("1. a\n\n2. b", "", "1. a\n\n2. b", "", id="ordered-list-stays-together"),
    pytest.param("# T\n\nBody", "# T\n\n", "Body", "", id="heading-settles"),
    # code fences
    pytest.param("``", "", "", "``", id="fence-prefix-held"),
    pytest.param("```pyth", "", "", "```pyth", id="fence-opener-held"),
    pytest.param("```py\nx = 1\ny", "", "```py\nx = 1\ny", "", id="open-fence-streams-code"),
    pytest.param("```py\nx = 1\n``", "", "```py\nx = 1\n", "``", id="closing-fence-held"),
    pytest.param("```\na\n\nb", "", "```\na\n\nb", "", id="blank-line-in-fence-no-settle"),
    pytest.param("```\n[a](b\n", "", "```\n[a](b\n", "", id="no-inline-rules-in-fence"),
    pytest.param("```\na\n```\n\nNext", "```\na\n```\n\n", "Next", "", id="closed-fence-settles"),
    pytest.param("~~~\na\n~~", "", "~~~\na\n", "~~", id="tilde-fence"),
    pytest.param("`code` here", "", "`code` here", "", id="inline-code-is-no-fence"),
    # tables
    pytest.param("| a | b |\n", "", "", "| a | b |\n", id="table-header-held"),
    pytest.param("| a | b |\n|---|-", "", "", "| a | b |\n|---|-", id="delimiter-being-typed"),
    pytest.param(
        "| a | b |\n|---|---|\n| 1 | 2",
        "",
        "| a | b |\n|---|---|\n",
        "| 1 | 2",
        id="table-row-held",
    ),
    pytest.param("| a |\n|:-:|\n| 1 |\n", "", "| a |\n|:-:|\n| 1 |\n", "", id="finished-rows-show"),
    pytest.param("Text\n| a", "", "Text\n", "| a", id="row-start-held"),
    # line starts that may become something else
    pytest.param("Title\n--", "", "Title\n", "--", id="setext-underline-held"),
    pytest.param("---", "", "", "---", id="rule-held"),
    pytest.param("- ", "", "", "- ", id="bullet-held"),
    pytest.param("- item", "", "- item", "", id="list-item-shows"),
    pytest.param("12", "", "", "12", id="number-held"),
    pytest.param("12.", "", "", "12.", id="ordered-marker-held"),
    pytest.param("12 apples", "", "12 apples", "", id="number-in-prose-shows"),
    pytest.param("##", "", "", "##", id="heading-marker-held"),
    pytest.param("## Ti", "", "## Ti", "", id="heading-shows"),
    # inline constructs on the unfinished line
    pytest.param("see [the docs](https://ex", "", "see ", "[the docs](https://ex", id="link-url"),
    pytest.param("see [the do", "", "see ", "[the do", id="link-text"),
    pytest.param("see [docs]", "", "see ", "[docs]", id="maybe-link-after-bracket"),
    pytest.param("see ![img](a.p", "", "see ", "![img](a.p", id="image"),
    pytest.param("see [docs](u) ok", "", "see [docs](u) ok", "", id="finished-link"),
    pytest.param("see [1] and more", "", "see [1] and more", "", id="brackets-not-a-link"),
    pytest.param("a `co", "", "a ", "`co", id="code-span"),
    pytest.param("a ``x ` y", "", "a ", "``x ` y", id="code-span-of-two"),
    pytest.param("a `x` b", "", "a `x` b", "", id="finished-code-span"),
    pytest.param("a `[x` b", "", "a `[x` b", "", id="bracket-in-code-span"),
    pytest.param("text **bol", "", "text ", "**bol", id="strong"),
    pytest.param("text **bold** ok", "", "text **bold** ok", "", id="finished-strong"),
    pytest.param(r"a \[b", "", r"a \[b", "", id="escaped-bracket"),
    pytest.param("done.\nsee [x", "", "done.\nsee ", "[x", id="only-the-last-line"),
    pytest.param("see [x\nmore", "", "see [x\nmore", "", id="finished-line-shows"),
]


@pytest.mark.parametrize(("text", "settled", "live", "held"), CASES)
def test_split(text: str, settled: str, live: str, held: str) -> None:
    assert split_markdown(text) == MarkdownSplit(settled, live, held)


def test_long_inline_hold_is_released() -> None:
    text = "a **" + "x" * MAX_INLINE_HOLD
    assert split_markdown(text) == MarkdownSplit("", text, "")


MARKDOWN = st.lists(
    st.sampled_from(
        [
            *["\n", "\n\n", "- ", "1. ", "```", "~~~", "|", "---", "#", "[", "]", "(", ")"],
            *["`", "**", "\\", " ", "  ", "word", "x"],
        ]
    ),
    max_size=40,
).map("".join)


@settings(deadline=None)
@given(text=MARKDOWN)
def test_parts_add_up(text: str) -> None:
    split = split_markdown(text)
    assert split.settled + split.live + split.held == text


@settings(deadline=None)
@given(text=MARKDOWN, more=MARKDOWN)
def test_settled_text_never_changes(text: str, more: str) -> None:
    assert split_markdown(text + more).settled.startswith(split_markdown(text).settled)
