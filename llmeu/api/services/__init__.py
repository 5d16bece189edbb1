"""What the routes work on besides the call: keys, policies, upstreams, receipts, the
platform's records. Each service hides the ledger and the providers behind it."""
