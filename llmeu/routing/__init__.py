"""Catalog, policies and the routing decision: pure, no I/O, no HTTP, no environment."""
