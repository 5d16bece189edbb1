"""What the probe reads from an upstream never crashes it, however the upstream nests its JSON."""

from __future__ import annotations

from llmeu.probe.exchange import Exchange, Read
from llmeu.protocol.sse import ServerSentEvent

DEEP = "[" * 100_000 + "]" * 100_000


def test_json_nested_past_the_parser_depth_is_kept_as_text() -> None:
    events = (ServerSentEvent(data='{"a": 1}'), ServerSentEvent(data=DEEP))
    exchange = Exchange("deep", status=200, reads=[Read(0.0, b"", events, False)])
    assert exchange.payloads() == [{"a": 1}, DEEP]


def test_a_whole_body_nested_past_the_parser_depth_is_not_json() -> None:
    assert Exchange("deep", status=200, body=DEEP.encode()).json() is None
