"""CPU per call line: what the per-call log line (logger `llmeu.calls`) costs, per format.

    python bench/call_log.py [--lines 20000] [--rounds 5]

Each round formats and writes `--lines` call lines of realistic completed
calls to /dev/null through the handler `llmeu serve` installs, in the text
and the JSON format, and, as the baseline in the same run, the same number
of plain `logger.info("call completed")` lines through the stdlib's own
`logging.Formatter` (what any Python service pays for one line). Prints
the median microseconds per line and the ratio to the baseline.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import time
from collections.abc import Callable

from llmeu.calls.record import Attempt, CallStatus, TraceRecord, new_trace_id
from llmeu.observability.logs import CALLS_LOGGER, CallLogObserver, configure_logging


def completed_call() -> TraceRecord:
    now = time.time()
    record = TraceRecord(
        trace_id=new_trace_id(), route="chat.completions", received_at=now, key_id="key_1a2b3c",
        request_model="bench-model", stream=False, instance_id="gw_bd33f4fef1df",
    )  # fmt: skip
    record.status, record.http_status = CallStatus.COMPLETED, 200
    record.model_used, record.provider, record.endpoint_id = "bench-model", "bench", "bench-up"
    record.inference_region, record.sovereignty_class = "local", "on_premise"
    record.policy_id, record.finish_reason = "bench", "stop"
    record.input_tokens, record.output_tokens, record.cost_eur = 6, 64, 1.34e-05
    record.finished_at = now + 0.0021
    record.attempts.append(Attempt("bench-up", "bench", now, now + 0.0019, "served"))
    return record


def per_line(write: Callable[[int], None], lines: int) -> float:
    started = time.process_time()
    for index in range(lines):
        write(index)
    return (time.process_time() - started) / lines * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    sink = open(os.devnull, "w")  # noqa: SIM115 - held for the whole run
    records = [completed_call() for _ in range(args.lines)]
    observer = CallLogObserver()
    plain = logging.getLogger("bench.plain")
    results: dict[str, list[float]] = {"baseline": [], "text": [], "json": []}
    for _ in range(args.rounds):
        for form in ("text", "json"):
            configure_logging("info", form)
            logging.getLogger().handlers[0].setStream(sink)  # type: ignore[attr-defined]
            results[form].append(per_line(lambda i: observer.call_finished(records[i]), args.lines))
        handler = logging.StreamHandler(sink)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logging.getLogger().handlers[:] = [handler]
        results["baseline"].append(per_line(lambda i: plain.info("call completed"), args.lines))
    base = statistics.median(results["baseline"])
    print(f"{args.lines} lines x {args.rounds} rounds, median CPU per line (logger {CALLS_LOGGER})")
    for name, values in results.items():
        median = statistics.median(values)
        print(f"  {name:9} {median:6.1f} us   {median / base:4.1f}x the plain stdlib line")


if __name__ == "__main__":
    main()
