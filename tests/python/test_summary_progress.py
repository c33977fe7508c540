"""Human-facing output: the run summary and the progress bar."""

from __future__ import annotations

import io

from lasthop.progress import Progress
from lasthop.summary import summarize

DOC = {
    "seed": 1, "code_version": "0.1.0+abc",
    "spec": {"name": "demo", "sim": {"duration_ns": 10_000_000_000, "warmup_ns": 0},
             "phy": {"standard": "vht", "channel_width": 80, "guard_interval": 800},
             "stations": [{}, {}]},
    "data": {
        "stats": {"events": 1000, "sim_time_ns": 10_000_000_000, "mpdus_delivered": 10,
                  "collisions": 2, "beacons": 97},
        "channel": {"busy_ns": 2_500_000_000, "idle_ns": 7_500_000_000, "tx_attempts": 12,
                    "collisions": 2},
        "flows": [{"id": 0, "station": 1, "direction": "down", "pattern": "cbr",
                   "goodput_bps": 12_345_678.0, "loss": 0.015,
                   "delay_ns": {"mean": 1_500_000.0, "p50": 1_000_000, "p95": 2_000_000,
                                "p99": 3_000_000, "max": 4_000_000}}],
        "stations": [{"id": 0, "mcs": 9, "nss": 1, "phy_rate_bps": 390_000_000,
                      "airtime_tx_ns": 0, "airtime_rx_ns": 1_000,
                      "mean_ampdu_down": 31.5, "mean_ampdu_up": 0.0},
                     {"id": 1, "mcs": 4, "nss": 1, "phy_rate_bps": 175_500_000,
                      "airtime_tx_ns": 1_000, "airtime_rx_ns": 2_000,
                      "mean_ampdu_down": 3.0, "mean_ampdu_up": 1.0}],
    },
}


def test_summary_contents():
    text = summarize(DOC, wall_s=0.5)
    assert "12.35" in text  # goodput Mb/s
    assert "1.500" in text and "3.000" in text  # delay mean and p99 in ms
    assert "1.50" in text  # loss %
    assert "31.5" in text and "25.0" in text and "75.0" in text  # A-MPDU, airtime shares
    assert "busy 25.0%" in text and "collisions 2" in text
    assert "1000 events" in text and "wall 0.50 s" in text


def test_summary_tolerates_missing_fields():
    assert "x" in summarize({"spec": {"name": "x"}, "data": {"flows": [{}], "stations": [{}]}})
    summarize({})


def test_progress_not_a_tty_prints_only_a_final_line():
    s = io.StringIO()
    p = Progress(10_000_000_000, label="demo", stream=s)
    for i in range(201):
        p(i / 200)
    assert s.getvalue() == ""
    p.finish()
    lines = s.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("demo: simulated 10s in ")


def test_progress_quiet_prints_nothing():
    s = io.StringIO()
    p = Progress(1, quiet=True, stream=s)
    p(0.5)
    p.finish()
    assert s.getvalue() == ""


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_tty_draws_bar_with_percent_sim_time_and_eta():
    s = _Tty()
    p = Progress(10_000_000_000, stream=s)
    p(0.5)
    p.finish()
    out = s.getvalue()
    assert "50.0%" in out and "sim 5.00s/10s" in out and "ETA" in out and "100.0%" in out
    assert out.endswith("\n")
