"""The AP drivers below the queues: ap.driver = "ath9k" (the pre-4.10 ath9k, which keeps up to
123 frames of its own below the qdisc) against "pull" (ath9k since it pulls from mac80211)."""

from __future__ import annotations

import json

import pytest

from lasthop import _native
from lasthop.spec import SpecError, normalize


def _chain(driver: str, hops: int, sizer: bool) -> dict:
    stations = [{"count": 1, "mcs": 7, "nss": 1, **({"parent": h - 1} if h else {})} for h in range(hops)]
    ap = {"qdisc": "fifo", "queue_limit": 1000, "driver": driver}
    if sizer:
        ap["buffer_sizer"] = "wqm"
    return {"name": "chain", "sim": {"duration": "16s", "warmup": "8s"},
            "phy": {"standard": "ht", "channel_width": 40, "guard_interval": 400},
            "mac": {"aggregation": False, "max_ampdu_mpdus": 1},
            "ap": ap, "wired": {"rate": "10Gbps", "delay": "50us"}, "stations": stations,
            "flows": [{"stations": hops - 1, "pattern": "tcp", "cc": "cubic"},
                      {"stations": hops - 1, "pattern": "ping", "interval": "20ms"}]}


def _ping_ms(spec: dict) -> float:
    d = json.loads(_native.run(json.dumps(normalize(spec).normalized), 1, None))
    return d["flows"][1]["delay_ns"]["p50"] / 1e6


def test_the_ath9k_stage_keeps_a_queue_below_a_sized_qdisc():
    # WQM shrinks the qdisc to a few frames; the pre-4.10 ath9k still holds up to 123 below it,
    # so the ping waits for them (at ~40 Mb/s of single frames: ~35 ms), while with the pull
    # driver it waits for almost nothing. A 1000-packet FIFO is long either way.
    for hops in (1, 2):
        pull, ath9k = _ping_ms(_chain("pull", hops, True)), _ping_ms(_chain("ath9k", hops, True))
        assert pull < 20 * hops and ath9k > pull + 15 * hops, (hops, pull, ath9k)
        fifo = _ping_ms(_chain("ath9k", hops, False))
        assert fifo > 2 * ath9k, (hops, fifo, ath9k)


def test_ath9k_relays_have_one_radio():
    s = _chain("ath9k", 2, False)
    s["stations"][1]["hop_channel"] = 1
    with pytest.raises(SpecError, match="stations\\[1\\].hop_channel"):
        normalize(s)
    s["ap"]["driver"] = "pull"
    normalize(s)
    s["ap"]["driver"] = "firmware"
    with pytest.raises(SpecError, match="stations\\[1\\].parent"):
        normalize(s)
