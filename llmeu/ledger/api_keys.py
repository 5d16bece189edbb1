"""API keys as the ledger stores them: only the hash of the secret, never the secret."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ApiKey:
    key_id: str
    name: str
    secret_hash: str
    policy_id: str
    is_admin: bool
    created_at: float
    budget_eur: float | None = None
    rpm_limit: int | None = None
    tpm_limit: int | None = None
    revoked_at: float | None = None
    purpose: str | None = None
    """What the key's calls are for (GDPR Art. 30 records of processing)."""
    allow_mcp_servers: tuple[str, ...] = ()
    """Patterns of the MCP tool servers the key may reach, within its policy's (empty: as
    the policy says)."""
    allow_tools: tuple[str, ...] = ()
    """Patterns of the MCP tools (exposed names) the key may call, within its policy's."""
    role: str | None = None
    """The platform role the key was given (`llmeu.api.routes.access`); None for a key
    given none, which acts as `acting_role` says."""
    team_id: str | None = None
    """The team the key belongs to (`llmeu.ledger.teams`); None: none."""
    owner_subject: str | None = None
    """The console user whose session created the key (`llmeu.ledger.directory_rows`); None:
    a key created with a key. Deprovisioning that user revokes it."""

    @property
    def acting_role(self) -> str:
        """The role the key acts in: its own, else `admin` for the admin key and `member`
        for every other key made before roles (what such a key could do then)."""
        if self.role is not None:
            return self.role
        return "admin" if self.is_admin else "member"

    def public(self) -> dict[str, Any]:
        """The key as the platform API shows it: never the hash."""
        return {
            "id": self.key_id,
            "object": "api_key",
            "name": self.name,
            "policy_id": self.policy_id,
            "admin": self.is_admin,
            "role": self.acting_role,
            "team_id": self.team_id,
            "owner": self.owner_subject,
            "budget_eur": self.budget_eur,
            "rpm_limit": self.rpm_limit,
            "tpm_limit": self.tpm_limit,
            "created_at": self.created_at,
            "revoked_at": self.revoked_at,
            "purpose": self.purpose,
            "allow_mcp_servers": list(self.allow_mcp_servers),
            "allow_tools": list(self.allow_tools),
        }
