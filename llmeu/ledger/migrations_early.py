"""The DDL of migrations 1 to 10 (`llmeu.ledger.migrations` numbers and names them): the
call ledger, keys and policies, the hash chain, personal data, retention and stored
responses. The texts keep the indentation they were applied with: SQLite keeps a table's
`CREATE` text as written."""

from __future__ import annotations

STEPS_1 = (
    """
            CREATE TABLE traces (
                trace_id TEXT PRIMARY KEY,
                key_id TEXT NOT NULL,
                route TEXT NOT NULL,
                request_model TEXT NOT NULL,
                stream INTEGER NOT NULL,
                status TEXT NOT NULL,
                instance_id TEXT NOT NULL,
                received_at DOUBLE PRECISION NOT NULL,
                first_token_at DOUBLE PRECISION,
                finished_at DOUBLE PRECISION,
                ttft_ms DOUBLE PRECISION,
                tpot_ms DOUBLE PRECISION,
                policy_id TEXT,
                endpoint_id TEXT,
                provider TEXT,
                model_used TEXT,
                model_version TEXT,
                inference_region TEXT,
                sovereignty_class TEXT,
                retention TEXT,
                input_tokens BIGINT,
                output_tokens BIGINT,
                tokens_estimated INTEGER NOT NULL DEFAULT 0,
                cost_eur DOUBLE PRECISION,
                finish_reason TEXT,
                http_status INTEGER,
                error_type TEXT,
                error_code TEXT,
                error_message TEXT,
                attempts TEXT NOT NULL DEFAULT '[]',
                excluded TEXT NOT NULL DEFAULT '[]',
                prompt TEXT,
                completion TEXT,
                content_expires_at DOUBLE PRECISION
            )
            """,
    "CREATE INDEX traces_received ON traces (received_at, trace_id)",
    "CREATE INDEX traces_key_received ON traces (key_id, received_at)",
    "CREATE INDEX traces_status ON traces (status, instance_id)",
    "CREATE INDEX traces_content_expiry ON traces (content_expires_at)",
    """
            CREATE TABLE api_keys (
                key_id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                secret_hash TEXT NOT NULL,
                policy_id TEXT NOT NULL,
                is_admin INTEGER NOT NULL DEFAULT 0,
                budget_eur DOUBLE PRECISION,
                rpm_limit INTEGER,
                tpm_limit INTEGER,
                created_at DOUBLE PRECISION NOT NULL,
                revoked_at DOUBLE PRECISION
            )
            """,
    """
            CREATE TABLE policies (
                policy_id TEXT PRIMARY KEY,
                body TEXT NOT NULL,
                updated_at DOUBLE PRECISION NOT NULL
            )
            """,
    """
            CREATE TABLE instances (
                instance_id TEXT PRIMARY KEY,
                started_at DOUBLE PRECISION NOT NULL,
                heartbeat_at DOUBLE PRECISION NOT NULL
            )
            """,
)

STEPS_3 = (
    # Digests a receipt carries: the request body as received, the content
    # produced, the policy as applied (llmeu.evidence.receipts).
    "ALTER TABLE traces ADD COLUMN policy_sha256 TEXT",
    "ALTER TABLE traces ADD COLUMN request_sha256 TEXT",
    "ALTER TABLE traces ADD COLUMN content_sha256 TEXT",
    # The row's place in the one chain of final traces (llmeu.ledger.chaining).
    "ALTER TABLE traces ADD COLUMN chain_seq BIGINT",
    "ALTER TABLE traces ADD COLUMN chain_link TEXT",
    "CREATE UNIQUE INDEX traces_chain_seq ON traces (chain_seq)",
    "CREATE INDEX traces_unchained ON traces (received_at) WHERE chain_seq IS NULL",
    """
            CREATE TABLE chain_head (
                head_id INTEGER PRIMARY KEY,
                seq BIGINT NOT NULL,
                link TEXT NOT NULL,
                trace_id TEXT
            )
            """,
    f"INSERT INTO chain_head (head_id, seq, link, trace_id) VALUES (1, 0, '{'0' * 64}', NULL)",
    """
            CREATE TABLE chain_checkpoints (
                chain_seq BIGINT PRIMARY KEY,
                trace_id TEXT,
                created_at DOUBLE PRECISION NOT NULL,
                token TEXT NOT NULL
            )
            """,
)

STEPS_4 = (
    # JSON: each detector that hit, the message path and how often; never a value.
    "ALTER TABLE traces ADD COLUMN personal_data TEXT",
)

STEPS_6 = (
    # Input tokens the upstream read from or wrote to its prompt cache (a share of
    # input_tokens, where it reports them), and the `anthropic-beta` features a
    # Messages call asked for and the gateway ignored (comma-separated).
    "ALTER TABLE traces ADD COLUMN cache_read_tokens BIGINT",
    "ALTER TABLE traces ADD COLUMN cache_creation_tokens BIGINT",
    "ALTER TABLE traces ADD COLUMN ignored_features TEXT",
)

STEPS_7 = (
    # SHA-256 of the caller's end-user id (`user`, `metadata.user_id`,
    # `safety_identifier`): enough to find a subject's calls, not the id itself.
    "ALTER TABLE traces ADD COLUMN subject_sha256 TEXT",
    "ALTER TABLE traces ADD COLUMN metadata_expires_at DOUBLE PRECISION",
    "ALTER TABLE traces ADD COLUMN metadata_purged_at DOUBLE PRECISION",
    "CREATE INDEX traces_subject ON traces (subject_sha256)",
    "CREATE INDEX traces_metadata_expiry ON traces (metadata_expires_at)",
    "ALTER TABLE api_keys ADD COLUMN purpose TEXT",
    """
            CREATE TABLE legal_holds (
                hold_id TEXT PRIMARY KEY,
                key_id TEXT,
                reason TEXT NOT NULL,
                created_at DOUBLE PRECISION NOT NULL,
                created_by TEXT NOT NULL,
                released_at DOUBLE PRECISION,
                released_by TEXT
            )
            """,
    """
            CREATE TABLE erasures (
                erasure_id TEXT PRIMARY KEY,
                subject_sha256 TEXT NOT NULL,
                requested_at DOUBLE PRECISION NOT NULL,
                requested_by TEXT NOT NULL,
                traces INTEGER NOT NULL
            )
            """,
)

STEPS_8 = (
    # The tenant is the key that created the response; content expires with the
    # policy's store_content and is erased with its data subject's.
    """
            CREATE TABLE stored_responses (
                response_id TEXT PRIMARY KEY,
                key_id TEXT NOT NULL,
                subject_sha256 TEXT,
                created_at DOUBLE PRECISION NOT NULL,
                expires_at DOUBLE PRECISION NOT NULL,
                response TEXT NOT NULL,
                input_items TEXT NOT NULL,
                conversation TEXT NOT NULL
            )
            """,
    "CREATE INDEX stored_responses_expiry ON stored_responses (expires_at)",
    "CREATE INDEX stored_responses_subject ON stored_responses (subject_sha256)",
)

STEPS_9 = (
    # A final row linked ahead and the check that it landed after a committed
    # head are one statement, alone in its transaction (llmeu.ledger.chaining):
    # a failed check must fail that statement, so that nothing of it commits.
    (
        "postgres",
        """
                CREATE FUNCTION llmeu_chain_landed(landed boolean) RETURNS boolean
                LANGUAGE plpgsql AS $$
                BEGIN
                    IF landed IS NOT TRUE THEN
                        RAISE EXCEPTION 'the chain head moved' USING ERRCODE = 'LLC01';
                    END IF;
                    RETURN true;
                END
                $$
                """,
    ),
    # The lock every writer of the chain takes before it stores a place, until
    # commit; returns its argument, so that an INSERT takes it in its first value.
    (
        "postgres",
        """
                CREATE FUNCTION llmeu_chain_lock(passed text) RETURNS text
                LANGUAGE plpgsql AS $$
                BEGIN
                    PERFORM pg_advisory_xact_lock(7813861853286690676);
                    RETURN passed;
                END
                $$
                """,
    ),
)

STEPS_10 = (
    # Most traces store no content and name no subject; their NULLs filled two
    # indexes, and every transaction wrote a page of each (SQLite: 10 pages per
    # one-call transaction, 8 without). The purge and the erasure look up non-NULL
    # values only (`content_expires_at <= ?`, `subject_sha256 = ?`), which both
    # databases match to a partial index.
    "DROP INDEX traces_content_expiry",
    "CREATE INDEX traces_content_expiry ON traces (content_expires_at) "
    "WHERE content_expires_at IS NOT NULL",
    "DROP INDEX traces_subject",
    "CREATE INDEX traces_subject ON traces (subject_sha256) WHERE subject_sha256 IS NOT NULL",
)
