"""The project's own supply-chain tooling: lock, SBOM, licence and vulnerability checks.

Run from the repository root as `python -m tools.NAME`; the Makefile does so. Not part
of the llmeu package, so nothing here ships to users.
"""
