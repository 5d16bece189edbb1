"""ISO-8601 durations (`P0D`, `P30D`, `PT12H`, `P1Y2M`) as comparable values.

Retention is compared, never added to calendars, so a year counts as 365 days
and a month as 30 days; the text as written is kept for display.

Durations are bounded by `LONGEST` (P100Y): a retention is added to
timestamps and converted to floats downstream, and a duration of hundreds of
digits would overflow there long after the policy was accepted. No real
retention is longer than a century; a policy that means "keep forever" says
P100Y.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_PATTERN = re.compile(
    r"^P(?!$)(?:(?P<Y>\d+)Y)?(?:(?P<M>\d+)M)?(?:(?P<W>\d+)W)?(?:(?P<D>\d+)D)?"
    r"(?:T(?=\d)(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+)S)?)?$"
)
_SECONDS = {
    "Y": 365 * 86400,
    "M": 30 * 86400,
    "W": 7 * 86400,
    "D": 86400,
    "h": 3600,
    "m": 60,
    "s": 1,
}
# Longer than any duration within LONGEST needs (PT3153600000S is 13 characters),
# short enough that no number is too long to convert.
_MAX_TEXT = 40


@dataclass(frozen=True, order=True, slots=True)
class Duration:
    seconds: int
    text: str = field(compare=False)

    @classmethod
    def parse(cls, text: str) -> Duration:
        """Parse an ISO-8601 duration up to `LONGEST`; raises ValueError naming the text."""
        match = _PATTERN.match(text) if isinstance(text, str) else None
        if match is None:
            raise ValueError(f"{text!r} is not an ISO-8601 duration such as P0D, P30D or PT12H")
        if len(text) > _MAX_TEXT:
            raise ValueError(
                f"{_shorten(text)} is too long: a duration has at most {_MAX_TEXT} characters "
                f"and lasts at most {LONGEST.text}"
            )
        seconds = sum(int(v) * _SECONDS[k] for k, v in match.groupdict().items() if v)
        if seconds > LONGEST.seconds:
            raise ValueError(f"{text!r} is longer than {LONGEST.text}, the longest accepted")
        return cls(seconds, text)

    def __str__(self) -> str:
        return self.text


def _shorten(text: str) -> str:
    return repr(text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "…")


ZERO = Duration(0, "P0D")
LONGEST = Duration(100 * _SECONDS["Y"], "P100Y")
