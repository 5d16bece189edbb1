"""The routes: one module per surface and per part of the platform API, and the table of
them all. A route parses its request, hands it to the call or to a service, and writes the
answer; it never reaches a provider or the ledger itself."""
