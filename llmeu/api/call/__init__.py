"""The call: one inference request from its key to its trace, whatever its surface.

`Calls.open` gives a surface its `Call`; the call takes one governance step
(record, screen, mask, admit, route), tries the route's endpoints, streams or
answers, and is settled with exactly one trace whatever ends it.
"""
