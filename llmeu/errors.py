"""The one error tree of llmeu.

Every failure the gateway can report is one of these classes. Providers turn
transport errors into `UpstreamError`s at their edge, the ledger's drivers
turn their database's errors into `DatabaseError`s; the API maps the tree to
HTTP statuses and bodies in one place (`llmeu.api.http.error_responses`), a
`DatabaseUnavailable` becoming a 503 `ledger_unavailable`.

    LlmeuError
    ├── ConfigError                 invalid settings or configuration file
    ├── DatabaseError               the ledger database refused the work (retrying fails too)
    │   ├── DatabaseUnavailable     it cannot take the work now; the same work may succeed later
    │   └── SchemaMismatch          its schema is older or newer than this release runs on
    ├── BackupFailed                a ledger backup or restore was not made, or its copy does
    │                               not hold a readable ledger: nothing half-written is left
    ├── SharedStateUnavailable      Redis (shared by gateway processes) does not answer now
    ├── ClientDisconnected          the client hung up: the call ends `cancelled`
    └── ApiError                    becomes an HTTP error response
        ├── InvalidRequest          400  invalid_request_error (names `param`)
        │   └── ProtocolError       400  a message broke MCP's JSON-RPC: carries its
        │                                JSON-RPC code (404 for an unknown method)
        ├── AuthenticationFailed    401  authentication_error
        ├── PermissionDenied        403  permission_error
        │   └── NoCompliantRoute    403  code `no_compliant_route`, per-endpoint reasons
        ├── NotFound                404  invalid_request_error
        ├── MethodNotAllowed        405  invalid_request_error
        ├── Conflict                409  invalid_request_error: the resource exists already
        ├── RequestTimeout          408  the body came too slowly (the connection is closed)
        ├── PayloadTooLarge         413  invalid_request_error
        ├── RateLimited             429  rate_limit_error, carries `retry_after`
        ├── ServiceUnavailable      503  the gateway itself cannot take the call
        │   ├── ServerBusy          503  no room for another body in flight; carries `retry_after`
        │   └── LimitsUnavailable   503  a key's limits cannot be checked, and its policy
        │                                refuses unchecked calls; carries `retry_after`
        └── UpstreamError           502  an upstream attempt failed (e.g. a broken stream)
            ├── UpstreamUnavailable 503  connection refused/reset, upstream 5xx or 429
            │   └── LocalModelUnavailable 503  the local model host is down or went down
            │                             during the call (`local_model_unavailable`)
            ├── UpstreamTimeout     504  connect, first-token, idle or total timeout
            └── UpstreamRejected    400  the upstream refused the request itself
                ├── UnsupportedByEndpoint 400  a local endpoint cannot do what is asked:
                │                         the call is `rejected`, naming the endpoint
                └── ToolServerError     an MCP tool server answered a call with a JSON-RPC
                                        error: relayed to the caller with its code
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class LlmeuError(Exception):
    """Base of every error llmeu raises on purpose."""


class ConfigError(LlmeuError):
    """Invalid settings or configuration file; `field` and `line` locate it."""

    def __init__(self, message: str, *, field: str | None = None, line: int | None = None):
        location = ""
        if field is not None:
            location += f" (field `{field}`"
            location += f", line {line})" if line is not None else ")"
        elif line is not None:
            location += f" (line {line})"
        super().__init__(message + location)
        self.field = field
        self.line = line


class DatabaseError(LlmeuError):
    """The database refused the operation itself: retrying it would fail the same way."""


class DatabaseUnavailable(DatabaseError):
    """The database cannot take the operation now; the same operation may succeed later."""


class SchemaMismatch(DatabaseError):
    """The ledger's schema is one this release does not run on: older than its own expand
    steps (`llmeu migrate` fixes it), or holding a newer release's contract step
    (`llmeu.ledger.schema`). The message names both versions."""


class BackupFailed(LlmeuError):
    """`llmeu ledger backup`/`restore` could not make or check its copy: a tool is missing,
    the file cannot be written or read, it holds no ledger, or the target is in use."""


class SharedStateUnavailable(LlmeuError):
    """The store gateway processes share besides the ledger (Redis) does not answer now."""


class ClientDisconnected(LlmeuError):
    """The client went away before its call was answered.

    Its own exception, never a task cancellation: a cancelled task means the
    server ended the request (shutdown), which the ledger records as
    `interrupted`, while a hang-up is `cancelled`.
    """

    def __init__(self, message: str = "the client disconnected") -> None:
        super().__init__(message)


class ApiError(LlmeuError):
    """An error that is answered to the client with `status` and an OpenAI-shaped body."""

    status = 500
    type = "api_error"
    default_code: str | None = None

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        details: Sequence[Mapping[str, Any]] | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code if code is not None else self.default_code
        self.details = details


class InvalidRequest(ApiError):
    status = 400
    type = "invalid_request_error"


class ProtocolError(InvalidRequest):
    """An MCP message that breaks the protocol (JSON-RPC envelope, headers, version, an
    unknown method): answered with the JSON-RPC error `rpc_code` and its `data`, and the
    HTTP status the protocol gives that code (404 for an unknown method, else 400)."""

    default_code = "mcp_protocol_error"

    def __init__(self, message: str, *, rpc_code: int, data: Any = None, status: int = 400) -> None:
        super().__init__(message)
        self.rpc_code = rpc_code
        self.data = data
        self.status = status


class AuthenticationFailed(ApiError):
    status = 401
    type = "authentication_error"
    default_code = "invalid_api_key"


class PermissionDenied(ApiError):
    status = 403
    type = "permission_error"


class NoCompliantRoute(PermissionDenied):
    """No endpoint serving the model satisfies the effective policy.

    A policy outcome, not a transient fault: clients must not retry it, so it
    is never a 429 or a 503.
    """

    default_code = "no_compliant_route"


class NotFound(ApiError):
    status = 404
    type = "invalid_request_error"
    default_code = "not_found"


class Conflict(ApiError):
    status = 409
    type = "invalid_request_error"
    default_code = "conflict"


class MethodNotAllowed(ApiError):
    status = 405
    type = "invalid_request_error"
    default_code = "method_not_allowed"


class RequestTimeout(ApiError):
    """The request body paused too long or came slower than the minimum rate."""

    status = 408
    type = "invalid_request_error"
    default_code = "request_timeout"


class PayloadTooLarge(ApiError):
    status = 413
    type = "invalid_request_error"
    default_code = "request_too_large"


class RateLimited(ApiError):
    status = 429
    type = "rate_limit_error"
    default_code = "rate_limit_exceeded"

    def __init__(self, message: str, *, retry_after: float, code: str | None = None):
        super().__init__(message, code=code)
        self.retry_after = retry_after


class ServiceUnavailable(ApiError):
    status = 503
    type = "api_error"
    default_code = "service_unavailable"


class ServerBusy(ServiceUnavailable):
    """The request bodies in flight hold all the memory the process gives them."""

    default_code = "server_busy"

    def __init__(self, message: str, *, retry_after: float = 1.0):
        super().__init__(message)
        self.retry_after = retry_after


class LimitsUnavailable(ServiceUnavailable):
    """The limits store does not answer and the key's policy says `limits_fail: closed`.

    A 503, not a 429: the client is over no limit, the gateway cannot tell;
    quota dashboards and clients must not read it as the key's fault.
    """

    default_code = "limits_unavailable"

    def __init__(self, message: str, *, retry_after: float):
        super().__init__(message)
        self.retry_after = retry_after


class UpstreamError(ApiError):
    """An upstream attempt failed.

    `retryable` says whether another endpoint could do better (connection
    errors, timeouts, 429 and 5xx from the upstream); a 4xx that describes the
    request itself is not retryable and is answered as it is.
    """

    status = 502
    type = "api_error"
    default_code = "upstream_error"
    retryable = False
    quotes_upstream = True
    """Whether the message may quote what the upstream sent (so possibly the prompt or the
    output): such text is kept out of what a policy that stores no content keeps."""

    def __init__(
        self,
        message: str,
        *,
        upstream_status: int | None = None,
        retryable: bool | None = None,
        code: str | None = None,
        param: str | None = None,
    ):
        super().__init__(message, code=code, param=param)
        self.upstream_status = upstream_status
        if retryable is not None:
            self.retryable = retryable


class UpstreamUnavailable(UpstreamError):
    status = 503
    default_code = "upstream_unavailable"
    retryable = True


class LocalModelUnavailable(UpstreamUnavailable):
    """The process that runs the local models exited or stopped answering, before or
    during the call; it is being restarted. Another endpoint the policy admits may serve."""

    default_code = "local_model_unavailable"
    quotes_upstream = False  # the gateway's own sentence


class UpstreamTimeout(UpstreamError):
    status = 504
    default_code = "upstream_timeout"
    retryable = True


class UpstreamRejected(UpstreamError):
    """The upstream refused the request itself (a 4xx other than 429); answered as a 400."""

    status = 400
    type = "invalid_request_error"
    default_code = "upstream_rejected_request"
    retryable = False


class UnsupportedByEndpoint(UpstreamRejected):
    """An endpoint the gateway runs itself refused the request before running anything:
    it lacks what the request asks for (tools, a JSON `response_format`, token-id input)
    or the prompt exceeds its context. A validation outcome: the call is `rejected`, and
    its trace names the endpoint that refused it."""

    quotes_upstream = False  # the gateway's own sentence


class ToolServerError(UpstreamRejected):
    """An MCP tool server answered a `tools/call` with a JSON-RPC error (an invalid
    argument, its own failure): the caller gets that error, code and data, as the server
    wrote it."""

    default_code = "tool_server_error"

    def __init__(self, message: str, *, rpc_code: int, data: Any = None) -> None:
        super().__init__(message)
        self.rpc_code = rpc_code
        self.data = data
