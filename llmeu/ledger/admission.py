"""Which final rows without a place in the hash chain are the gateway's own.

No row enters the chain unmarked that the gateway did not write. A final row
that waits for a place is one of the linking transaction's own rows, or one
the gateway admitted when it made it, into `chain_admitted` (migration 12):

- a call found `interrupted`, made from the open-call record of a process
  the ledger knows (`Store.mark_interrupted`: the process is in `instances`,
  its heartbeat stopped; `Store.mark_instance_interrupted`: its supervisor
  saw it die). A row anybody else put in `traces` has no open call; an open
  call of a process never registered has no known process;
- the unchained final rows a ledger held when it was upgraded to migration
  12: they predate the check.

Any other — a row inserted into the database directly — is chained all the
same (`llmeu.ledger.chaining`), with `chain_suspect` set inside its link, a
warning in the log, and a `suspect` line from `llmeu audit verify` ever
after. Refusing it instead would leave it waiting without a place for ever,
and every write after it would go the locked way; chained, it can never
leave the chain unnoticed, nor lose its mark. An entry is forgotten once its
row is chained.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from llmeu.ledger.database import Row

log = logging.getLogger("llmeu.ledger")

ADMIT = (
    "INSERT INTO chain_admitted (trace_id, instance_id, admitted_at) "
    "SELECT trace_id, instance_id, ? FROM open_calls WHERE EXISTS (SELECT 1 FROM traces t "
    "WHERE t.trace_id = open_calls.trace_id AND t.instance_id = open_calls.instance_id "
    "AND t.status = 'interrupted' AND t.chain_seq IS NULL)"
)
"""The `interrupted` rows just made from open calls (the caller adds which processes';
the `?` is when), admitted."""
KEEP_ADMITTED = " ON CONFLICT (trace_id) DO NOTHING"
FORGET_CHAINED = (
    "DELETE FROM chain_admitted WHERE EXISTS (SELECT 1 FROM traces t "
    "WHERE t.trace_id = chain_admitted.trace_id AND t.chain_seq IS NOT NULL)"
)
ADMITTED = (
    "(SELECT COUNT(*) FROM chain_admitted a WHERE a.trace_id = traces.trace_id "
    "AND a.instance_id = traces.instance_id) AS admitted"
)
"""A column for a read of unchained rows of `traces`: whether the gateway admitted each."""


def mark_suspects(rows: list[Row], written: Mapping[str, Row]) -> list[Row]:
    """`rows` (read with `ADMITTED`) to chain: those neither `written` by the transaction
    that links them nor admitted get `chain_suspect`."""
    for row in rows:
        if not row.pop("admitted") and row["trace_id"] not in written:
            row["chain_suspect"] = 1
            log.warning(
                "ledger: trace %s is final but has no place in the chain, and no gateway "
                "process recorded the call: chained as suspect (llmeu audit verify names it)",
                row["trace_id"],
            )
    return rows
