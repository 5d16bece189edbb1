"""Upstream adapters: one module per endpoint kind, all behind `Provider` (`base.py`)."""
