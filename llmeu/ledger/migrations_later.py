"""The DDL of migrations 11 on (`llmeu.ledger.migrations` numbers and names them): calls
in progress, chain version 2, the answer cache, MCP, teams, console sign-ins, admin events
and the directory. A new migration's DDL is added at the end. The texts keep the
indentation they were applied with: SQLite keeps a table's `CREATE` text as written."""

from __future__ import annotations

# The columns of `traces` a call's row has while it runs (llmeu.ledger.trace_writes), with
# the types and defaults they have in `traces`: no chain place, never purged.
_OPEN_CALL_TYPES = (
    ("trace_id", "TEXT PRIMARY KEY"), ("key_id", "TEXT NOT NULL"), ("route", "TEXT NOT NULL"),
    ("request_model", "TEXT NOT NULL"), ("stream", "INTEGER NOT NULL"),
    ("status", "TEXT NOT NULL"), ("instance_id", "TEXT NOT NULL"),
    ("received_at", "DOUBLE PRECISION NOT NULL"), ("first_token_at", "DOUBLE PRECISION"),
    ("finished_at", "DOUBLE PRECISION"), ("ttft_ms", "DOUBLE PRECISION"),
    ("tpot_ms", "DOUBLE PRECISION"), ("policy_id", "TEXT"), ("endpoint_id", "TEXT"),
    ("provider", "TEXT"), ("model_used", "TEXT"), ("model_version", "TEXT"),
    ("inference_region", "TEXT"), ("sovereignty_class", "TEXT"), ("retention", "TEXT"),
    ("input_tokens", "BIGINT"), ("output_tokens", "BIGINT"),
    ("tokens_estimated", "INTEGER NOT NULL DEFAULT 0"), ("cost_eur", "DOUBLE PRECISION"),
    ("finish_reason", "TEXT"), ("http_status", "INTEGER"), ("error_type", "TEXT"),
    ("error_code", "TEXT"), ("error_message", "TEXT"), ("attempts", "TEXT NOT NULL DEFAULT '[]'"),
    ("excluded", "TEXT NOT NULL DEFAULT '[]'"), ("prompt", "TEXT"), ("completion", "TEXT"),
    ("content_expires_at", "DOUBLE PRECISION"), ("subject_sha256", "TEXT"),
    ("metadata_expires_at", "DOUBLE PRECISION"), ("personal_data", "TEXT"),
    ("policy_sha256", "TEXT"), ("request_sha256", "TEXT"), ("content_sha256", "TEXT"),
    ("cache_read_tokens", "BIGINT"), ("cache_creation_tokens", "BIGINT"),
    ("ignored_features", "TEXT"),
)  # fmt: skip
_OPEN_CALL_COLUMNS = ", ".join(name for name, _ in _OPEN_CALL_TYPES)
# Added to both tables later, in this order (migration 12).
_CACHE_HIT_TYPES = (
    ("cache_hit", "TEXT"), ("cache_source", "TEXT"), ("saved_eur", "DOUBLE PRECISION"),
)  # fmt: skip
_MCP_CALL_TYPES = (
    ("mcp_server", "TEXT"), ("mcp_tool", "TEXT"), ("bytes_in", "BIGINT"), ("bytes_out", "BIGINT"),
)  # fmt: skip
_OPEN_CALLS = (
    "CREATE TABLE open_calls ("
    + ", ".join(f"{name} {kind}" for name, kind in _OPEN_CALL_TYPES)
    + "){end}"
)

STEPS_11 = (
    # A call's in-progress row (found `interrupted` after a crash) lives here until
    # its final row goes into `traces` and removes it in the same transaction: a
    # trace row is written once, final, and touches the indexes of `traces` once.
    # The table holds only the calls open now, so it stays a page or a few; SQLite
    # keeps it in one b-tree (no rowid, no second index for the key).
    ("sqlite", _OPEN_CALLS.format(end=" WITHOUT ROWID")),
    ("postgres", _OPEN_CALLS.format(end="")),
    f"INSERT INTO open_calls ({_OPEN_CALL_COLUMNS}) "
    f"SELECT {_OPEN_CALL_COLUMNS} FROM traces WHERE status = 'in_progress'",
    "DELETE FROM traces WHERE status = 'in_progress'",
)

STEPS_12 = (
    # What a row stores of its place besides chain_seq and chain_link
    # (llmeu.evidence.chain): the version that chained it (NULL: version 1), the
    # digest of the metadata a purge empties, and the mark of a row chained
    # though no gateway process recorded it.
    "ALTER TABLE traces ADD COLUMN chain_version INTEGER",
    "ALTER TABLE traces ADD COLUMN metadata_sha256 TEXT",
    "ALTER TABLE traces ADD COLUMN chain_suspect INTEGER",
    # Final rows the gateway made without a place in the chain, admitted to it
    # unmarked: a call found `interrupted`, from an open call of a known process
    # (llmeu.ledger.chaining). The unchained final rows of a ledger upgraded now
    # predate the check and are admitted with it.
    """
            CREATE TABLE chain_admitted (
                trace_id TEXT PRIMARY KEY,
                instance_id TEXT NOT NULL,
                admitted_at DOUBLE PRECISION NOT NULL
            )
            """,
    "INSERT INTO chain_admitted (trace_id, instance_id, admitted_at) "
    "SELECT trace_id, instance_id, received_at FROM traces "
    "WHERE chain_seq IS NULL AND status <> 'in_progress'",
)

STEPS_13 = (
    # `exact` or `semantic` when the gateway's answer cache answered the call, the
    # trace of the call that produced the answer, and what that call cost. Both
    # tables, as `open_calls` is copied into `traces` for calls found interrupted.
    *(
        f"ALTER TABLE {table} ADD COLUMN {name} {kind}"
        for table in ("traces", "open_calls")
        for name, kind in _CACHE_HIT_TYPES
    ),
)

STEPS_14 = (
    # A `/mcp` tool call's server (catalog id), tool (as the server names it) and
    # the bytes of its request and of its answer. NULL on every other call. Both
    # tables: an interrupted tool call still names its server.
    *(
        f"ALTER TABLE {table} ADD COLUMN {name} {kind}"
        for table in ("traces", "open_calls")
        for name, kind in _MCP_CALL_TYPES
    ),
    # Usage grouped by tool server reads only the tool calls.
    "CREATE INDEX traces_mcp_server ON traces (mcp_server) WHERE mcp_server IS NOT NULL",
    # A key's own patterns of tool servers and tools (JSON lists; NULL: none), which
    # narrow its policy's on every MCP call.
    "ALTER TABLE api_keys ADD COLUMN allow_mcp_servers TEXT",
    "ALTER TABLE api_keys ADD COLUMN allow_tools TEXT",
)

STEPS_15 = (
    # The highest migration the process's release knows (NULL: a release from
    # before this step, which counts as older than any contract step), and the mark
    # of a contract step (1), which a release that does not know it must not run
    # beside (llmeu.ledger.schema). Expand-only: releases before it write neither.
    "ALTER TABLE instances ADD COLUMN schema_version INTEGER",
    "ALTER TABLE schema_migrations ADD COLUMN contract INTEGER",
)

STEPS_16 = (
    # The platform role a key acts in (`admin`, `operator`, `auditor`, `dpo`,
    # `team_admin`, `member`); NULL for the keys made before roles, which act as
    # `member` (or as `admin`, the admin key). An older release reading the same
    # database ignores the column: its keys keep the rights it gave them.
    "ALTER TABLE api_keys ADD COLUMN role TEXT",
)

STEPS_17 = (
    # A team: its policy (its keys' are at least as strict), a monthly budget in
    # EUR (NULL: none) and its members (a JSON list of names). A key's team is
    # NULL for a key in none; an older release ignores both.
    """
            CREATE TABLE teams (
                team_id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                policy_id TEXT NOT NULL,
                budget_eur_month DOUBLE PRECISION,
                members TEXT NOT NULL DEFAULT '[]',
                created_at DOUBLE PRECISION NOT NULL,
                updated_at DOUBLE PRECISION NOT NULL
            )
            """,
    "ALTER TABLE api_keys ADD COLUMN team_id TEXT",
    "CREATE INDEX api_keys_team ON api_keys (team_id) WHERE team_id IS NOT NULL",
)

STEPS_18 = (
    # A sign-in under way (`state` → its nonce and PKCE verifier), single use; and a
    # signed-in console session, keyed by the SHA-256 of its cookie's id (the id
    # itself is never stored). Both are new tables: an older release ignores them.
    """
            CREATE TABLE console_logins (
                state TEXT PRIMARY KEY,
                nonce TEXT NOT NULL,
                verifier TEXT NOT NULL,
                redirect_url TEXT NOT NULL,
                created_at DOUBLE PRECISION NOT NULL
            )
            """,
    """
            CREATE TABLE console_sessions (
                session_hash TEXT PRIMARY KEY,
                subject TEXT NOT NULL,
                name TEXT,
                roles TEXT NOT NULL,
                csrf_token TEXT NOT NULL,
                id_token TEXT NOT NULL,
                created_at DOUBLE PRECISION NOT NULL,
                last_seen_at DOUBLE PRECISION NOT NULL
            )
            """,
)

STEPS_19 = (
    # Expand only: a release without it keeps running on this database. Each
    # event is also a final row of `traces` (route 'admin') whose chained
    # request_sha256 is the digest of this row (llmeu.evidence.admin_events).
    """
            CREATE TABLE admin_events (
                trace_id TEXT PRIMARY KEY,
                at DOUBLE PRECISION NOT NULL,
                actor TEXT NOT NULL,
                role TEXT,
                action TEXT NOT NULL,
                target TEXT,
                before_sha256 TEXT,
                after_sha256 TEXT,
                source TEXT
            )
            """,
    "CREATE INDEX admin_events_at ON admin_events (at, trace_id)",
)

STEPS_20 = (
    # Expand only: new tables and a nullable column, which an older release ignores.
    # A user is provisioned by SCIM (`provisioned` 1) or first seen at a console
    # sign-in; `subject` is the issuer's `sub`, linked at the first sign-in;
    # `attributes` the SCIM resource as last written (JSON); `role` one granted by
    # an admin (NULL: none). `user_name_key` is the lower-cased userName, unique.
    """
            CREATE TABLE directory_users (
                user_id TEXT PRIMARY KEY,
                user_name TEXT NOT NULL,
                user_name_key TEXT NOT NULL,
                subject TEXT,
                external_id TEXT,
                display_name TEXT,
                active INTEGER NOT NULL DEFAULT 1,
                provisioned INTEGER NOT NULL DEFAULT 0,
                attributes TEXT NOT NULL DEFAULT '{}',
                role TEXT,
                created_at DOUBLE PRECISION NOT NULL,
                updated_at DOUBLE PRECISION NOT NULL
            )
            """,
    "CREATE UNIQUE INDEX directory_users_name ON directory_users (user_name_key)",
    "CREATE UNIQUE INDEX directory_users_subject ON directory_users (subject)",
    """
            CREATE TABLE directory_groups (
                group_id TEXT PRIMARY KEY,
                display_name TEXT NOT NULL,
                display_name_key TEXT NOT NULL,
                external_id TEXT,
                created_at DOUBLE PRECISION NOT NULL,
                updated_at DOUBLE PRECISION NOT NULL
            )
            """,
    "CREATE INDEX directory_groups_name ON directory_groups (display_name_key)",
    """
            CREATE TABLE directory_members (
                group_id TEXT NOT NULL,
                user_id TEXT NOT NULL,
                PRIMARY KEY (group_id, user_id)
            )
            """,
    "CREATE INDEX directory_members_user ON directory_members (user_id)",
    # The subject of the console user whose session created the key (NULL: a key
    # made with a key); such a user's deprovisioning revokes it.
    "ALTER TABLE api_keys ADD COLUMN owner_subject TEXT",
    "CREATE INDEX api_keys_owner ON api_keys (owner_subject) WHERE owner_subject IS NOT NULL",
)

STEPS_21 = (
    # Requests and tokens per minute for all of a team's keys together (NULL: no
    # limit). Expand only: an older release ignores both columns. Numbered after
    # 20 (SCIM users), which does not touch `teams`; `migrate` applies whichever
    # of them a ledger lacks.
    "ALTER TABLE teams ADD COLUMN rpm_limit INTEGER",
    "ALTER TABLE teams ADD COLUMN tpm_limit INTEGER",
)
