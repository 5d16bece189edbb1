"""The ledger's hash chain: one link per final trace, and signed checkpoints of its head.

    link(n) = SHA-256( link(n-1) as 32 bytes || JCS(metadata of row n) )
    link(0) = 32 zero bytes (GENESIS)

The metadata is the row's columns as the database stores them, minus the
content (prompt, completion and their expiry): erasing or purging content
never breaks the chain, while any change to what the call was — its status,
route, timings, tokens, cost, attempts — does. Columns are named
(`CHAINED_COLUMNS`) rather than "all but content" so that a migration adding
a column never changes the links of old rows; null values are left out, so a
column added later can join the list without breaking them either. JSON
columns (attempts, excluded) are hashed as the text stored, and JCS writes
`1` and `1.0` alike, so SQLite and PostgreSQL rows hash the same.

How the ledger is meant to store it (integration):

- each final trace row gets `chain_seq` (1, 2, 3 … with no gaps) and
  `chain_link` (64 hex digits);
- the head is the row with the highest `chain_seq`; a writer links its
  rows after the head it wrote last and checks before commit that they
  landed right after a committed row, or reads the head and links them then;
  on PostgreSQL every writer first takes one advisory lock, SQLite's write
  transaction being exclusive already (`llmeu.ledger.chaining`). A unique
  index on `chain_seq` refuses a second row at one place, so the chain stays
  one chain, in commit order, across processes. A PostgreSQL SEQUENCE would
  not do: it leaves gaps on rollback, and a gap means "deleted" to the
  verifier;
- every N traces or M minutes a checkpoint of the head is signed
  (`sign_checkpoint`) and stored, and may be copied to an append-only place:
  it is what makes truncating the tail, or rewriting the whole chain with
  recomputed links, detectable (see `llmeu.evidence.audit`).

The link costs one JCS serialisation and one SHA-256 per final trace, inside
the write transaction; signing happens only for checkpoints.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from llmeu.evidence.jcs import FlatObject, canonical_json
from llmeu.evidence.jws import CHECKPOINT_TYPE, sign_compact, verify_compact
from llmeu.evidence.signing_keys import SigningKey

GENESIS_LINK = "0" * 64
CHECKPOINT_VERSION = 1
CHAINED_COLUMNS = (
    "trace_id", "key_id", "route", "request_model", "stream", "status", "instance_id",
    "received_at", "first_token_at", "finished_at", "ttft_ms", "tpot_ms", "policy_id",
    "endpoint_id", "provider", "model_used", "model_version", "inference_region",
    "sovereignty_class", "retention", "input_tokens", "output_tokens", "tokens_estimated",
    "cost_eur", "finish_reason", "http_status", "error_type", "error_code", "error_message",
    "attempts", "excluded",
    # Digests that receipts carry, once the ledger stores them.
    "policy_sha256", "request_sha256", "content_sha256",
)  # fmt: skip


_CHAINED_OBJECT = FlatObject(CHAINED_COLUMNS)


def chain_metadata(row: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a trace row the chain covers: named columns, nulls left out."""
    return {name: row[name] for name in CHAINED_COLUMNS if row.get(name) is not None}


def chain_body(row: Mapping[str, Any]) -> bytes:
    """`canonical_json(chain_metadata(row))`: the bytes a row's link hashes."""
    return _CHAINED_OBJECT.encode(row)


def link_after(previous_link: str, body: bytes) -> str:
    """The link of a row whose canonical metadata is `body`, after `previous_link`."""
    return hashlib.sha256(bytes.fromhex(previous_link) + body).hexdigest()


@dataclass(frozen=True, slots=True)
class ChainLink:
    """A position in the chain: the row at `seq` (0 before the first) and its link."""

    seq: int
    link: str
    trace_id: str | None = None

    def next(self, row: Mapping[str, Any]) -> ChainLink:
        """The link of `row`, written right after this one: its `chain_seq` and `chain_link`."""
        return ChainLink(self.seq + 1, link_after(self.link, chain_body(row)), row.get("trace_id"))


GENESIS = ChainLink(0, GENESIS_LINK)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A signed statement that the chain's head was `head` at `created_at`."""

    head: ChainLink
    created_at: float
    kid: str | None = None

    @property
    def created_iso(self) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.created_at))


def sign_checkpoint(head: ChainLink, key: SigningKey, *, created_at: float) -> str:
    """A compact JWS (`typ: llmeu-checkpoint+jws`) over the JCS form of:

    checkpoint_version  1
    chain_seq           the head's sequence number
    chain_link          the head's link (hex)
    trace_id            the head's trace
    created_at          seconds since the Unix epoch (UTC)
    """
    payload = {
        "checkpoint_version": CHECKPOINT_VERSION,
        "chain_seq": head.seq,
        "chain_link": head.link,
        "trace_id": head.trace_id,
        "created_at": created_at,
    }
    return sign_compact(canonical_json(payload), key, typ=CHECKPOINT_TYPE)


def read_checkpoint(token: str, keys: Mapping[str, Ed25519PublicKey]) -> Checkpoint:
    """The checkpoint a token states, once its signature verifies.

    Raises ValueError with a one-line reason otherwise.
    """
    check = verify_compact(token, keys, typ=CHECKPOINT_TYPE)
    if not check.valid or check.payload is None:
        raise ValueError(check.reason)
    payload = check.payload
    if payload.get("checkpoint_version") != CHECKPOINT_VERSION:
        raise ValueError(f"unknown checkpoint_version {payload.get('checkpoint_version')!r}")
    seq, link = payload.get("chain_seq"), payload.get("chain_link")
    created_at, trace_id = payload.get("created_at"), payload.get("trace_id")
    if (
        not isinstance(seq, int)
        or not isinstance(link, str)
        or not isinstance(created_at, int | float)
        or not (trace_id is None or isinstance(trace_id, str))
    ):
        raise ValueError("the checkpoint payload lacks chain_seq, chain_link or created_at")
    return Checkpoint(ChainLink(seq, link, trace_id), float(created_at), check.kid)
