"""What the gateway tells operators: spans, metrics, logs and overhead headers.

`hooks` defines the call-lifecycle interface the API calls; `metrics`,
`tracing` and `logs` implement it; `telemetry` builds them for a gateway.
This package sits below the API and never imports it.
"""
