"""The `llmeu` command: each subcommand module builds settings or calls an API, nothing more."""
