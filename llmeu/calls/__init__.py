"""What a call is, whatever its surface or upstream: its request, its output, its record.

`request` is the canonical chat call every surface decodes into and every
provider translates from; `output` is what comes back (deltas, the end of a
stream, whole completions); `record` is the trace the ledger keeps;
`hangup` tells an upstream that its client went away. Nothing here does I/O.
"""
