"""The console's session cookie: reading it, setting it, and guarding changes made with it.

The cookie (`llmeu_session`) holds only an opaque random id: HttpOnly (no script
reads it), SameSite=Lax (a cross-site POST, fetch or form, never carries it),
`Secure` when the gateway is reached over HTTPS (its scheme, or the configured
redirect URL's), Path=/ so it reaches the platform API as well as the console.

It authenticates the platform API only, and only when no `Authorization`
header is sent: a Bearer key is always checked as a key. A request with the
cookie that changes something (any method but GET, HEAD, OPTIONS) must also
carry the session's CSRF token in `X-CSRF-Token` (the console reads it from
`GET /auth/session`, which another site's script cannot read) and, when the
browser sends `Origin`, come from this gateway's own origin: SameSite alone
would leave the gateway open to a sibling subdomain.
"""

from __future__ import annotations

from http.cookies import CookieError, SimpleCookie

from llmeu.api.http.asgi import Request
from llmeu.api.routes.access import Role
from llmeu.api.services.platform_service import Platform
from llmeu.api.services.sso import ConsoleSession
from llmeu.errors import AuthenticationFailed, PermissionDenied
from llmeu.ledger.api_keys import ApiKey

COOKIE = "llmeu_session"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def cookie_id(request: Request) -> str | None:
    raw = request.header(b"cookie")
    if not raw:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw)
    except CookieError:
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None and morsel.value else None


def own_origin(request: Request, redirect_url: str | None) -> str:
    """This gateway's origin as the browser sees it: the redirect URL's when one is
    configured (behind a proxy), else the request's scheme and `Host`."""
    if redirect_url:
        scheme, _, rest = redirect_url.partition("://")
        return f"{scheme}://{rest.split('/', 1)[0]}"
    return f"{request.scope.get('scheme', 'http')}://{request.header(b'host') or ''}"


async def console_session(p: Platform, request: Request) -> ConsoleSession | None:
    """The signed-in session the request's cookie names (None without a cookie, with an
    `Authorization` header, or when single sign-on is not set up); 401 if it has ended
    (or the directory deactivated its user), 403 for a change without the CSRF token or from
    another origin. Its roles are those the user holds now (`Directory.current`)."""
    sso = p.sso
    if sso is None or request.header(b"authorization") is not None:
        return None
    session_id = cookie_id(request)
    if session_id is None:
        return None
    session = await sso.session(session_id)
    if session is None:
        raise AuthenticationFailed(
            "your console session has ended: sign in again", code="session_expired"
        )
    if p.directory is not None:
        session = await p.directory.current(session)
    if request.method not in SAFE_METHODS:
        origin = request.header(b"origin")
        if origin is not None and origin != own_origin(request, sso.redirect_url):
            raise PermissionDenied(
                f"a change with the console's session must come from the console, not {origin}",
                code="csrf_failed",
            )
        sso.check_csrf(session, request.header(b"x-csrf-token"))
    return session


def session_key(
    session: ConsoleSession, role: Role, default_policy: str, team_id: str | None = None
) -> ApiKey:
    """The signed-in user as the platform routes see a caller: a key of no secret, named
    `user:<subject>` (what holds and erasures record as who made them), in `role`, in the
    team the directory says they are a member of."""
    return ApiKey(
        key_id=f"user:{session.subject}",
        name=session.name or session.subject,
        secret_hash="",
        policy_id=default_policy,
        is_admin=False,
        created_at=session.created_at,
        role=str(role),
        team_id=team_id,
    )


def set_cookie(session_id: str, *, secure: bool, max_age: float) -> tuple[bytes, bytes]:
    flags = "; Secure" if secure else ""
    value = f"{COOKIE}={session_id}; Path=/; Max-Age={int(max_age)}; HttpOnly; SameSite=Lax{flags}"
    return (b"set-cookie", value.encode())


def clear_cookie(*, secure: bool) -> tuple[bytes, bytes]:
    flags = "; Secure" if secure else ""
    return (b"set-cookie", f"{COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax{flags}".encode())
