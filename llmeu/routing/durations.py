"""ISO-8601 durations (`P0D`, `P30D`, `PT12H`, `P1Y2M`) as comparable values.

Retention is compared, never added to calendars, so a year counts as 365 days
and a month as 30 days; the text as written is kept for display.
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


@dataclass(frozen=True, order=True, slots=True)
class Duration:
    seconds: int
    text: str = field(compare=False)

    @classmethod
    def parse(cls, text: str) -> Duration:
        """Parse an ISO-8601 duration; raises ValueError naming the text when it is not one."""
        match = _PATTERN.match(text) if isinstance(text, str) else None
        if match is None:
            raise ValueError(f"{text!r} is not an ISO-8601 duration such as P0D, P30D or PT12H")
        seconds = sum(int(v) * _SECONDS[k] for k, v in match.groupdict().items() if v)
        return cls(seconds, text)

    def __str__(self) -> str:
        return self.text


ZERO = Duration(0, "P0D")
