"""The bundled model's tokens under a grammar, in the model host.

The grammar arrives as GBNF text (built by the gateway from the tools'
schemas, `llmeu.providers.local_tools`) and is compiled here. llama.cpp checks
every candidate token of the vocabulary against it at each step; for a call
that costs little (few tokens fit), but a grammar that admits a plain answer
(`tool_choice: auto`) would check all 49,152 tokens at every step of a
free-text answer for nothing. So once the first token shows the answer is
plain, generation goes on without the grammar, from the same cache (one token
is evaluated again).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def grammar_compiles(vocab: Any, grammar: str) -> bool:
    """Whether llama.cpp itself parses `grammar` (root rule `root`): its parser is stricter
    than the schema converter, and llama-cpp-python hands a grammar that does not parse to
    the sampler chain as a null pointer, on which the process faults."""
    import llama_cpp

    sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode("utf-8"), b"root")
    if not sampler:
        return False
    llama_cpp.llama_sampler_free(sampler)
    return True


def constrained_tokens(
    llm: Any,
    prompt: list[int],
    grammar: str | None,
    sampling: dict[str, Any],
    *,
    plain_possible: bool = False,
) -> Iterator[int]:
    """The answer's tokens, held to `grammar` while it constrains anything; `plain_possible`
    says the grammar admits a plain answer (whose first token is not a call's `<`)."""
    from llama_cpp.llama_grammar import LlamaGrammar

    if grammar is None:
        yield from llm.generate(prompt, reset=True, **sampling)
        return
    compiled = LlamaGrammar.from_string(grammar, verbose=False)
    tokens = llm.generate(prompt, reset=True, grammar=compiled, **sampling)
    first = next(tokens, None)
    if first is None:
        return
    yield first
    if not plain_possible or llm.detokenize([first]).startswith(b"<"):
        yield from tokens
        return
    tokens.close()
    yield from llm.generate([*prompt, first], reset=True, **sampling)
