"""ISO-8601 durations: what parses, to how many seconds, and what is refused."""

from __future__ import annotations

import pytest

from llmeu.routing.durations import LONGEST, ZERO, Duration

DAY = 86400

VALID = [
    pytest.param("P0D", 0, id="zero-days"),
    pytest.param("PT0S", 0, id="zero-seconds"),
    pytest.param("P30D", 30 * DAY, id="days"),
    pytest.param("P1W", 7 * DAY, id="week"),
    pytest.param("P1M", 30 * DAY, id="month-is-30-days"),
    pytest.param("P1Y", 365 * DAY, id="year-is-365-days"),
    pytest.param("PT12H", 12 * 3600, id="hours"),
    pytest.param("PT90M", 90 * 60, id="minutes"),
    pytest.param("PT45S", 45, id="seconds"),
    pytest.param("P1DT12H", DAY + 12 * 3600, id="days-and-hours"),
    pytest.param(
        "P1Y2M3DT4H5M6S", 365 * DAY + 60 * DAY + 3 * DAY + 4 * 3600 + 5 * 60 + 6, id="all"
    ),
    pytest.param("P100Y", 100 * 365 * DAY, id="century"),
]

INVALID = [
    pytest.param("", id="empty"),
    pytest.param("P", id="bare-P"),
    pytest.param("PT", id="bare-PT"),
    pytest.param("P1DT", id="T-without-time"),
    pytest.param("30D", id="no-P"),
    pytest.param("P30", id="no-unit"),
    pytest.param("p30d", id="lower-case"),
    pytest.param("P-1D", id="negative"),
    pytest.param("P1.5D", id="fraction"),
    pytest.param("PT1D", id="days-after-T"),
    pytest.param("P1H", id="hours-before-T"),
    pytest.param("P1D1Y", id="units-out-of-order"),
    pytest.param(" P1D", id="leading-space"),
    pytest.param("P1D ", id="trailing-space"),
    pytest.param("30 days", id="prose"),
]


@pytest.mark.parametrize(("text", "seconds"), VALID)
def test_parses_to_seconds_and_keeps_the_text(text: str, seconds: int) -> None:
    duration = Duration.parse(text)
    assert duration.seconds == seconds
    assert str(duration) == text


@pytest.mark.parametrize("text", INVALID)
def test_refuses_what_is_not_a_duration_and_names_it(text: str) -> None:
    with pytest.raises(ValueError, match="is not an ISO-8601 duration") as caught:
        Duration.parse(text)
    assert repr(text) in str(caught.value)


@pytest.mark.parametrize("value", [30, None, 1.5], ids=["int", "none", "float"])
def test_refuses_a_value_that_is_not_text(value: object) -> None:
    with pytest.raises(ValueError, match="is not an ISO-8601 duration"):
        Duration.parse(value)  # type: ignore[arg-type]


TOO_LONG = [
    pytest.param("P101Y", id="years"),
    pytest.param("P36501D", id="days"),
    pytest.param("PT3153600001S", id="seconds"),
    pytest.param("P100YT1S", id="a-second-past-a-century"),
    pytest.param("P" + "9" * 320 + "Y", id="hundreds-of-digits"),
    pytest.param("P" + "9" * 5000 + "Y", id="past-the-int-conversion-limit"),
]


@pytest.mark.parametrize("text", TOO_LONG)
def test_refuses_durations_beyond_a_century(text: str) -> None:
    with pytest.raises(ValueError, match="P100Y") as caught:
        Duration.parse(text)
    assert len(str(caught.value)) < 200, "the message quotes a long text shortened"


def test_a_century_is_the_longest() -> None:
    assert Duration.parse("P100Y") == LONGEST == Duration.parse("P36500D")


ORDER = [
    pytest.param("P0D", "PT1S", "<", id="zero-below-a-second"),
    pytest.param("PT24H", "P1D", "==", id="hours-equal-a-day"),
    pytest.param("P4W", "P1M", "<", id="four-weeks-below-a-month"),
    pytest.param("P30D", "P1M", "==", id="month-is-thirty-days"),
    pytest.param("P1Y", "P364D", ">", id="year-above-364-days"),
]


@pytest.mark.parametrize(("left", "right", "relation"), ORDER)
def test_compares_by_length_not_by_text(left: str, right: str, relation: str) -> None:
    a, b = Duration.parse(left), Duration.parse(right)
    assert (a < b, a == b, a > b) == (relation == "<", relation == "==", relation == ">")


def test_max_keeps_the_text_of_the_longer() -> None:
    assert str(max(Duration.parse("PT12H"), Duration.parse("P1D"))) == "P1D"
    assert Duration.parse("PT0S") == ZERO
    assert str(ZERO) == "P0D"
