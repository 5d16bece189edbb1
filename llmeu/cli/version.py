"""`llmeu --version`: the version and the commit it was built from, looked up only when asked."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from llmeu.buildinfo import build_info


class VersionAction(argparse.Action):
    """Like argparse's `version` action, but asks git only when `--version` is given."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.setdefault("help", "print the version and the git commit it was built from")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        sys.stdout.write(build_info().describe() + "\n")
        parser.exit()
