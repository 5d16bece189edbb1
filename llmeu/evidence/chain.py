"""The ledger's hash chain: one link per final trace, and signed checkpoints of its head.

    link(n) = SHA-256( link(n-1) as 32 bytes || JCS(body of row n) )
    link(0) = 32 zero bytes (GENESIS)

Version 2 (`CHAIN_VERSION`), the body of a row is

    {the columns a metadata purge keeps (KEPT_COLUMNS), "chain_version": 2,
     "metadata_sha256": hex SHA-256 of JCS(the columns it empties, METADATA_COLUMNS)}

Every column of a trace row is in one of the two sets, except the content
(prompt, completion and their expiry) and the chain's own bookkeeping: erasing
or purging content never breaks the chain, while any change to what the call
was — its status, route, timings, tokens, cost, attempts, the personal data
found, its data subject, its retention — does. The ledger stores the digest
with the link (`metadata_sha256`): a metadata purge empties the
`METADATA_COLUMNS` (to `PURGED_VALUES`) and keeps that digest, so the kept
columns of a purged row still hash, with it, to the row's link, and its emptied
columns can be checked empty (`llmeu.evidence.audit`).

Version 1 (rows chained before version 2; the ledger's `chain_version` is
NULL): the body is JCS of the `VERSION_1_COLUMNS`. Such a row stays verifiable
under its version; what version 1 left out (the personal data found, the data
subject, the cache tokens, the ignored features, the metadata's expiry) is not
covered for it, and a purged version-1 row's link can only be taken as given.
The version is inside what version 2 hashes, so a row cannot be moved to an
earlier version unnoticed.

Columns are named rather than "all but content" so that a migration adding a
column never changes the links of old rows; null values are left out. JSON
columns (attempts, excluded, personal_data) are hashed as the text stored,
and JCS writes `1` and `1.0` alike, so SQLite and PostgreSQL rows hash the same.

How the ledger is meant to store it (integration):

- each final trace row gets `chain_seq` (1, 2, 3 … with no gaps), `chain_link`
  (64 hex digits), `chain_version` and `metadata_sha256` (`link_row`);
- the head is the row with the highest `chain_seq`; a writer links its
  rows after the head it wrote last and checks before commit that they
  landed right after a committed row, or reads the head and links them then;
  on PostgreSQL every writer first takes one advisory lock, SQLite's write
  transaction being exclusive already (`llmeu.ledger.chaining`). A unique
  index on `chain_seq` refuses a second row at one place, so the chain stays
  one chain, in commit order, across processes. A PostgreSQL SEQUENCE would
  not do: it leaves gaps on rollback, and a gap means "deleted" to the
  verifier;
- a final row the gateway finds without a place that no gateway process
  recorded (`chain_suspect`, a kept column) is chained with that mark, which
  the verifier names;
- every N traces or M minutes a checkpoint of the head is signed
  (`sign_checkpoint`) and stored, and may be copied to an append-only place:
  it is what makes truncating the tail, or rewriting the whole chain with
  recomputed links, detectable (see `llmeu.evidence.audit`).

The link costs two JCS serialisations and two SHA-256 per final trace, inside
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
CHAIN_VERSION = 2
KEPT_COLUMNS = (
    "trace_id", "key_id", "route", "stream", "status", "instance_id", "received_at",
    "tokens_estimated", "metadata_expires_at", "policy_sha256", "request_sha256",
    "content_sha256", "chain_suspect",
)  # fmt: skip
"""What a metadata purge keeps of a row: its identity, place and status, who called, the
digests a receipt carries, when its metadata expires; and the suspect mark."""
PURGED_VALUES: dict[str, Any] = {
    "request_model": "", "policy_id": None, "endpoint_id": None, "provider": None,
    "model_used": None, "model_version": None, "inference_region": None,
    "sovereignty_class": None, "retention": None, "input_tokens": None, "output_tokens": None,
    "cost_eur": None, "finish_reason": None, "http_status": None, "error_type": None,
    "error_code": None, "error_message": None, "attempts": "[]", "excluded": "[]",
    "first_token_at": None, "finished_at": None, "ttft_ms": None, "tpot_ms": None,
    "subject_sha256": None, "personal_data": None, "cache_read_tokens": None,
    "cache_creation_tokens": None, "ignored_features": None, "cache_hit": None,
    "cache_source": None, "saved_eur": None, "mcp_server": None, "mcp_tool": None,
    "bytes_in": None, "bytes_out": None,
}  # fmt: skip
"""The metadata a purge empties, and the value it leaves (`llmeu.ledger.retention`)."""
METADATA_COLUMNS = tuple(PURGED_VALUES)
CHAINED_COLUMNS = (*KEPT_COLUMNS, *METADATA_COLUMNS)
"""Every column of a trace row the current version covers."""
VERSION_1_COLUMNS = (
    "trace_id", "key_id", "route", "request_model", "stream", "status", "instance_id",
    "received_at", "first_token_at", "finished_at", "ttft_ms", "tpot_ms", "policy_id",
    "endpoint_id", "provider", "model_used", "model_version", "inference_region",
    "sovereignty_class", "retention", "input_tokens", "output_tokens", "tokens_estimated",
    "cost_eur", "finish_reason", "http_status", "error_type", "error_code", "error_message",
    "attempts", "excluded", "policy_sha256", "request_sha256", "content_sha256",
)  # fmt: skip
"""What version 1 covers: rows chained before version 2 are verified against these."""

_METADATA_OBJECT = FlatObject(METADATA_COLUMNS)
_BODY_OBJECT = FlatObject((*KEPT_COLUMNS, "chain_version", "metadata_sha256"))
_VERSION_1_OBJECT = FlatObject(VERSION_1_COLUMNS)


def chain_metadata(row: Mapping[str, Any]) -> dict[str, Any]:
    """The object a row's link hashes under the current version, written plainly: the
    reference that `chain_body` (the fast path) is held to."""
    metadata = {name: row[name] for name in METADATA_COLUMNS if row.get(name) is not None}
    kept = {name: row[name] for name in KEPT_COLUMNS if row.get(name) is not None}
    digest = hashlib.sha256(canonical_json(metadata)).hexdigest()
    return {**kept, "chain_version": CHAIN_VERSION, "metadata_sha256": digest}


def metadata_sha256(row: Mapping[str, Any]) -> str:
    """The digest of what a metadata purge empties: kept in the ledger beside the link."""
    return hashlib.sha256(_METADATA_OBJECT.encode(row)).hexdigest()


def chain_body(row: Mapping[str, Any], digest: str | None = None) -> bytes:
    """`canonical_json(chain_metadata(row))`: the bytes a row's link hashes (current
    version); `digest`: its metadata's, when known (a purged row's, as stored)."""
    members = dict(row)  # a copy in C: cheaper than picking the kept columns out
    members.setdefault("chain_suspect", None)  # a row being written carries no mark
    members["chain_version"] = CHAIN_VERSION
    members["metadata_sha256"] = metadata_sha256(row) if digest is None else digest
    return _BODY_OBJECT.encode(members)


def version_1_body(row: Mapping[str, Any]) -> bytes:
    """The bytes a row chained under version 1 hashes: JCS of its `VERSION_1_COLUMNS`."""
    return _VERSION_1_OBJECT.encode(row)


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
        return link_row(self, row)[0]


def link_row(head: ChainLink, row: Mapping[str, Any]) -> tuple[ChainLink, str]:
    """`row`'s place right after `head` under the current version, and its metadata's
    digest: with `CHAIN_VERSION`, what the ledger stores beside the row."""
    digest = metadata_sha256(row)
    link = link_after(head.link, chain_body(row, digest))
    return ChainLink(head.seq + 1, link, row.get("trace_id")), digest


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
