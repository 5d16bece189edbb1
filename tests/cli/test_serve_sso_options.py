"""`llmeu serve`'s single sign-on options: what they set, and the combinations refused."""

from __future__ import annotations

import pytest

from llmeu.cli.main import build_parser, main
from llmeu.cli.serve import settings_from_args
from llmeu.config import Settings


def settings(*argv: str) -> Settings:
    return settings_from_args(build_parser().parse_args(["serve", *argv]))


def test_the_options_become_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IDP_SECRET", "s3cret")
    made = settings(
        "--oidc-issuer", "https://id.example.org", "--oidc-client-id", "console",
        "--oidc-client-secret-env", "IDP_SECRET", "--oidc-role-map", "auditors=auditor",
        "--oidc-role-map", "team=a=team_admin", "--console-auth", "oidc",
        "--session-idle-timeout", "60",
    )  # fmt: skip
    assert made.oidc_issuer == "https://id.example.org" and made.oidc_client_id == "console"
    assert made.oidc_client_secret == "s3cret" and "s3cret" not in repr(made)
    assert made.oidc_role_map == (("auditors", "auditor"), ("team=a", "team_admin"))
    assert made.oidc_roles_claim == "groups"
    assert made.console_auth == "oidc" and made.session_idle_seconds == 60
    assert made.scim_token is None and made.scim_required is False


def test_the_scim_options_become_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCIM_BEARER", "t0ken")
    made = settings("--scim-token-env", "SCIM_BEARER", "--scim-required")
    assert made.scim_token == "t0ken" and "t0ken" not in repr(made) and made.scim_required


REFUSED = {
    "issuer without client": (["--oidc-issuer", "https://id.example.org"], "go together"),
    "oidc console without issuer": (["--console-auth", "oidc"], "needs --oidc-issuer"),
    "unset secret variable": (
        ["--oidc-issuer", "https://i", "--oidc-client-id", "c",
         "--oidc-client-secret-env", "NO_SUCH_VARIABLE_SET"], "unset"),
    "unset scim token variable": (["--scim-token-env", "NO_SUCH_VARIABLE_SET"], "unset"),
    "scim required without scim": (["--scim-required"], "needs --scim-token-env"),
}  # fmt: skip


@pytest.mark.parametrize(("argv", "says"), REFUSED.values(), ids=REFUSED.keys())
def test_refused_combinations_exit_2_saying_why(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", *argv]) == 2
    assert says in capsys.readouterr().err


def test_a_role_map_naming_no_role_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--oidc-role-map", "auditors=superuser"])
    assert "GROUP=ROLE" in capsys.readouterr().err
