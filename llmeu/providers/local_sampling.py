"""The bundled model's tokens under a grammar, where generation runs.

The grammar arrives as GBNF text (`llmeu.providers.local_tools`) and is
compiled here. llama.cpp checks every candidate token of the vocabulary
against it at each step; for a call that costs little (few tokens fit), but
a grammar that admits a plain answer (`tool_choice: auto`) would check all
49,152 tokens at every step of a free-text answer for nothing. So once the
first token shows the answer is plain, generation goes on without the grammar,
from the same cache (one token is evaluated again).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from llmeu.providers.local_tools import admits_plain_answer


def constrained_tokens(
    llm: Any, prompt: list[int], grammar: str | None, sampling: dict[str, Any]
) -> Iterator[int]:
    """The answer's tokens, held to `grammar` while it constrains anything."""
    from llama_cpp.llama_grammar import LlamaGrammar

    if grammar is None:
        yield from llm.generate(prompt, reset=True, **sampling)
        return
    tokens = llm.generate(prompt, reset=True, grammar=LlamaGrammar.from_string(grammar), **sampling)
    first = next(tokens, None)
    if first is None:
        return
    yield first
    if not admits_plain_answer(grammar) or llm.detokenize([first]).startswith(b"<"):
        yield from tokens
        return
    tokens.close()
    yield from llm.generate([*prompt, first], reset=True, **sampling)
