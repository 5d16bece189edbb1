"""Who a console user is in the organisation's directory: at sign-in, and at every request.

At sign-in (`signing_in`) the ID token's claims find the user's directory entry:
by `subject` (linked at an earlier sign-in), else by userName — the token's
`email`, `preferred_username` or `upn`, case-insensitively — else by
`externalId` equal to its `oid` or `sub`. An inactive user is refused (403
`user_deactivated`); with `--scim-required`, so is one SCIM did not provision
(403 `user_not_provisioned`). A user the directory does not know yet is added,
unprovisioned, so that an admin can grant them a role (`GET
/v1/platform/users`).

A user's roles are those their token's groups give (fixed at sign-in), with
those of the directory added at every request (`current`): the role of each
SCIM group they are a member of whose displayName `--oidc-role-map` maps, and
a role an admin granted. So a role granted, a group joined or left, applies at
the user's next request; a user deactivated or deleted is signed out at it.
A signed-in user acts as a member of the first team (`team_of`) that lists
their subject, e-mail or userName among its members, or whose name is that of
one of their SCIM groups.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Iterable
from dataclasses import replace

from llmeu.errors import AuthenticationFailed, DatabaseError, PermissionDenied
from llmeu.ledger.console_sessions import ConsoleSession, delete_sessions_of
from llmeu.ledger.database import Database
from llmeu.ledger.directory_rows import (
    DirectoryUser,
    group_names_of,
    insert_user,
    update_user,
    user_by_external_id,
    user_by_name,
    user_by_subject,
)
from llmeu.ledger.teams import Team, list_teams

_NAME_CLAIMS = ("email", "preferred_username", "upn")
_ID_CLAIMS = ("oid", "sub")


def deactivated() -> PermissionDenied:
    return PermissionDenied(
        "your account is deactivated in the organisation's directory: ask its administrator",
        code="user_deactivated",
    )


def new_user_id() -> str:
    return secrets.token_hex(16)


class Directory:
    def __init__(self, db: Database, role_map: tuple[tuple[str, str], ...], *, scim_required: bool):
        self._db = db
        self._role_map = role_map
        self.scim_required = scim_required

    def roles_of_groups(self, groups: Iterable[str]) -> tuple[str, ...]:
        names = {g.casefold() for g in groups}
        return tuple(dict.fromkeys(r for g, r in self._role_map if g.casefold() in names))

    async def roles(self, user: DirectoryUser) -> tuple[str, ...]:
        """The roles the directory gives `user`: their SCIM groups', and one granted."""
        groups = self.roles_of_groups(await group_names_of(self._db, user.user_id))
        granted = (user.role,) if user.role else ()
        return tuple(dict.fromkeys((*groups, *granted)))

    async def find(self, claims: dict[str, object]) -> DirectoryUser | None:
        user = await user_by_subject(self._db, str(claims["sub"]))
        for claim in _NAME_CLAIMS:
            value = claims.get(claim)
            if user is None and isinstance(value, str) and value:
                user = await user_by_name(self._db, value)
        for claim in _ID_CLAIMS:
            value = claims.get(claim)
            if user is None and isinstance(value, str) and value:
                user = await user_by_external_id(self._db, value)
        return user

    async def signing_in(self, claims: dict[str, object]) -> tuple[str, ...]:
        """The directory's roles for the user the claims name; 403 if they may not sign in."""
        subject = str(claims["sub"])
        user = await self.find(claims)
        if user is None:
            if self.scim_required:
                raise PermissionDenied(
                    "you are not provisioned to this gateway by the organisation's directory",
                    code="user_not_provisioned",
                )
            await self._remember(subject, claims)
            return ()
        if not user.active:
            raise deactivated()
        if user.subject != subject:
            await update_user(self._db, replace(user, subject=subject, updated_at=time.time()))
        return await self.roles(user)

    async def _remember(self, subject: str, claims: dict[str, object]) -> None:
        name = next((v for c in _NAME_CLAIMS if isinstance(v := claims.get(c), str) and v),
                    subject)  # fmt: skip
        display = claims.get("name")
        now = time.time()
        user = DirectoryUser(
            new_user_id(), name, subject, None, display if isinstance(display, str) else None,
            True, False, {"userName": name}, None, now, now,
        )  # fmt: skip
        # A sign-in of the same user in another process may have added them first.
        with contextlib.suppress(DatabaseError):
            await insert_user(self._db, user)

    async def current(self, session: ConsoleSession) -> ConsoleSession:
        """The session with the roles the user holds now; 401 (and every session of theirs
        ended) if the directory deactivated them or, with `--scim-required`, forgot them, or
        they hold no role any more."""
        user = await user_by_subject(self._db, session.subject)
        if user is None and not self.scim_required:
            return session
        if user is None or not user.active:
            await delete_sessions_of(self._db, session.subject)
            raise AuthenticationFailed(
                "your console session has ended: your account is no longer active in the "
                "organisation's directory",
                code="user_deactivated",
            )
        roles = tuple(dict.fromkeys((*session.roles, *await self.roles(user))))
        if not roles:
            await delete_sessions_of(self._db, session.subject)
            raise AuthenticationFailed(
                "your console session has ended: you hold no role on this gateway any more",
                code="no_role",
            )
        return replace(session, roles=roles)

    async def team_of(self, session: ConsoleSession) -> str | None:
        user = await user_by_subject(self._db, session.subject)
        names = [session.subject, *(n for n in (session.name,) if n)]
        groups: list[str] = []
        if user is not None:
            names.append(user.user_name)
            groups = await group_names_of(self._db, user.user_id)
        team = team_for(await list_teams(self._db), names, groups)
        return None if team is None else team.team_id


def team_for(teams: Iterable[Team], names: Iterable[str], groups: Iterable[str]) -> Team | None:
    """The first of `teams` whose members list one of `names` (a subject, an e-mail address,
    a userName), or whose name is one of `groups`, compared case-insensitively."""
    wanted = {n.casefold() for n in names}
    joined = {g.casefold() for g in groups}
    for team in teams:
        if team.name.casefold() in joined or wanted & {m.casefold() for m in team.members}:
            return team
    return None
