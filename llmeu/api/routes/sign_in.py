"""Signing in to the console with the organisation's issuer: `/auth/…`.

`GET /auth/login` sends the browser to the issuer; `GET /auth/callback` is
where the issuer sends it back (the redirect URI to register); `GET
/auth/session` tells the console how it may sign in and, when signed in, who
and with which roles, and the CSRF token; `POST /auth/logout` ends the
session (with the CSRF token) and answers the issuer's logout URL, if any.
The flow itself is `llmeu.api.services.sso`'s; the cookie,
`llmeu.api.routes.session_cookie`'s.

Each sign-in, failed sign-in and sign-out is an admin event on the evidence
chain (`auth.sign_in`, `auth.sign_in_failed`, `auth.sign_out`): the actor is
`user:<subject>` acting in the roles the issuer's groups gave (comma-separated),
or `unauthenticated` for a callback that signed nobody in. A failed sign-in
counts as a failed authentication of its address (`AuthFailures`), and is
recorded only while that address has failures left, so a flood of made-up
callbacks writes a bounded number of rows.
"""

from __future__ import annotations

from llmeu.api.http.asgi import JSON_HEADERS, Headers, Request
from llmeu.api.routes.console import SECURITY_HEADERS
from llmeu.api.routes.session_cookie import (
    clear_cookie,
    console_session,
    cookie_id,
    own_origin,
    set_cookie,
)
from llmeu.api.services.admin_log import Actor
from llmeu.api.services.platform_service import UNAUTHENTICATED, Platform
from llmeu.api.services.sso import ConsoleSession, Opened, Sso
from llmeu.errors import ApiError, AuthenticationFailed, InvalidRequest, NotFound
from llmeu.protocol.json_codec import encoder

_NO_STORE: Headers = [(b"cache-control", b"no-store"), *SECURITY_HEADERS]


def _sso(p: Platform) -> Sso:
    if p.sso is None:
        raise NotFound(
            "sign-in with an issuer is not set up on this gateway (`--oidc-issuer`)",
            code="sso_not_configured",
        )
    return p.sso


def _redirect_url(sso: Sso, request: Request) -> str:
    return sso.redirect_url or own_origin(request, None) + "/auth/callback"


def _secure(sso: Sso, request: Request) -> bool:
    return own_origin(request, sso.redirect_url).startswith("https://")


async def handle_login(p: Platform, request: Request) -> None:
    sso = _sso(p)
    location = await sso.begin(_redirect_url(sso, request), request.client)
    await request.respond(302, b"", [(b"location", location.encode()), *_NO_STORE])


async def handle_callback(p: Platform, request: Request) -> None:
    sso = _sso(p)
    try:
        opened = await _finish(sso, request)
    except ApiError as error:
        await _sign_in_failed(p, request, error)
        raise
    await p.admin_log.record(_user(opened.session, request), "auth.sign_in",
                             opened.session.subject, after=_who(opened.session))  # fmt: skip
    cookie = set_cookie(opened.session_id, secure=_secure(sso, request), max_age=sso.max_seconds)
    # Relative, so a gateway behind a path prefix keeps it: /auth/callback → /console.
    await request.respond(303, b"", [(b"location", b"../console"), cookie, *_NO_STORE])


async def _finish(sso: Sso, request: Request) -> Opened:
    query = request.query
    if "error" in query:
        reason = query.get("error_description") or query["error"]
        raise AuthenticationFailed(
            f"the issuer did not sign you in: {reason}", code="sign_in_failed"
        )
    state, code = query.get("state"), query.get("code")
    if not state or not code:
        raise InvalidRequest("the callback needs `state` and `code`", param="code")
    return await sso.finish(state, code)


async def _sign_in_failed(p: Platform, request: Request, error: ApiError) -> None:
    client = request.client
    failures = p.keys.failures
    if client is None or not failures.allows(client):
        return
    failures.failed(client)
    await p.admin_log.record(Actor(UNAUTHENTICATED, None, client), "auth.sign_in_failed",
                             None, after={"code": error.code})  # fmt: skip


def _user(session: ConsoleSession, request: Request) -> Actor:
    return Actor(f"user:{session.subject}", ",".join(session.roles), request.client)


def _who(session: ConsoleSession) -> dict[str, object]:
    return {"subject": session.subject, "name": session.name, "roles": list(session.roles)}


async def handle_session(p: Platform, request: Request) -> None:
    methods = p.console_auth
    body: dict[str, object] = {"object": "console_session", "methods": list(methods),
                               "signed_in": False}  # fmt: skip
    if p.sso is not None and cookie_id(request) is not None:
        try:
            session = await console_session(p, request)
        except AuthenticationFailed:
            session = None
        if session is not None:
            body.update(signed_in=True, subject=session.subject, name=session.name,
                        roles=list(session.roles), csrf_token=session.csrf_token)  # fmt: skip
    await request.respond(200, _json(body), [*JSON_HEADERS, *_NO_STORE])


async def handle_logout(p: Platform, request: Request) -> None:
    sso = _sso(p)
    session = await console_session(p, request)
    if session is None:
        raise AuthenticationFailed("not signed in with a console session", code="missing_session")
    # Where the issuer sends the browser back: beside the callback, so a path prefix holds.
    console_url = _redirect_url(sso, request).removesuffix("/auth/callback") + "/console"
    logout_url = await sso.sign_out(session, console_url)
    await p.admin_log.record(_user(session, request), "auth.sign_out", session.subject,
                             before=_who(session))  # fmt: skip
    headers = [*JSON_HEADERS, clear_cookie(secure=_secure(sso, request)), *_NO_STORE]
    await request.respond(200, _json({"object": "sign_out", "logout_url": logout_url}), headers)


def _json(body: object) -> bytes:
    return encoder.encode(body)
