from fractions import Fraction

import pytest

from lasthop.units import UnitError, format_duration, format_rate, parse_duration, parse_rate


@pytest.mark.parametrize("text,ns", [
    ("10s", 10_000_000_000),
    ("102.4ms", 102_400_000),
    ("5.484ms", 5_484_000),
    ("0.1s", 100_000_000),
    ("0.3s", 300_000_000),  # float(0.3) * 1e9 would be 299999999.99999994
    ("1us", 1_000),
    ("9ns", 9),
    ("0s", 0),
    (" 2 ms ", 2_000_000),
    (".5s", 500_000_000),
    ("1.000000001s", 1_000_000_001),
])
def test_parse_duration_exact(text, ns):
    got = parse_duration(text)
    assert got == ns and type(got) is int


@pytest.mark.parametrize("text,bps", [
    ("100Mbps", 100_000_000),
    ("1.5Gbps", 1_500_000_000),
    ("54Mbps", 54_000_000),
    ("5.5Mbps", 5_500_000),
    ("64kbps", 64_000),
    ("1bps", 1),
    ("0.1Gbps", 100_000_000),
])
def test_parse_rate_exact(text, bps):
    got = parse_rate(text)
    assert got == bps and type(got) is int


@pytest.mark.parametrize("bad", [10, 10.0, "10", "1e3", True, None, [], "", "ms", "s10",
                                  "-1s", "-0.5ms", "10 sec", "10S", "1e3s", "0.5ns", "1.5.2s",
                                  "inf s", "nan s", "+5s"])
def test_parse_duration_rejects(bad):
    with pytest.raises(UnitError):
        parse_duration(bad)


@pytest.mark.parametrize("bad", [100, "100", "-5Mbps", "5MBps", "5mbps", "5Mb/s", "1.5",
                                  "0.5bps", "Mbps"])
def test_parse_rate_rejects(bad):
    with pytest.raises(UnitError):
        parse_rate(bad)


def test_bare_number_message_says_units_are_mandatory():
    with pytest.raises(UnitError, match="units are mandatory"):
        parse_duration(10)
    with pytest.raises(UnitError, match="unknown unit"):
        parse_rate("5MBps")
    with pytest.raises(UnitError, match="negative"):
        parse_rate("-5Mbps")


@pytest.mark.parametrize("ns", [0, 1, 999, 1_000, 1_500, 5_484_000, 102_400_000,
                                10_000_000_000, 1_234_567_500_000_000])
def test_format_duration_round_trips(ns):
    assert parse_duration(format_duration(ns)) == ns


@pytest.mark.parametrize("bps", [1, 6_000_000, 1_500_000_000, 433_333_333, 10_000_000_000])
def test_format_rate_round_trips(bps):
    assert parse_rate(format_rate(bps)) == bps


def test_formats():
    assert format_duration(5_484_000) == "5.484ms"
    assert format_duration(102_400_000) == "102.4ms"
    assert format_rate(1_500_000_000) == "1.5Gbps"
    assert Fraction(parse_duration("5.484ms"), 1) == Fraction(5484, 1000) * 10**6
