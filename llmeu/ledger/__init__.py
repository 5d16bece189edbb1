"""Traces, usage, keys and policies: one SQL layer over SQLite and PostgreSQL."""
