"""Generative tests of the spec layer (hypothesis): documents built from the keys of
docs/spec.md, with values inside, at and beyond the documented edges, values of the wrong type
and unknown keys. Every document must either

* be rejected by `spec.normalize` + `spec.check_native` with a SpecError whose message is one
  line naming a key path, or
* be accepted and then run (`_native.run`, simulated time cut to at most 50 ms) without a panic
  or a hang, deterministically: two runs of the same normalized spec give the same JSON.

Profiles (LASTHOP_HYPOTHESIS_PROFILE): "default" (300 documents, ~10-20 s), "long" (5000; set
LASTHOP_HYPOTHESIS_EXAMPLES to change it). Statistics: pytest --hypothesis-show-statistics.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
from datetime import timedelta
from typing import Any

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, event, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from lasthop.spec import SECTIONS, SpecError, check_native, normalize  # noqa: E402

# The default profile (the test suite) draws the same examples on every run, so a pass or a
# failure is reproducible; the "long" profile (the fuzzing campaign) draws new ones each time.
settings.register_profile(
    "default", max_examples=300, deadline=timedelta(seconds=10), derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(
    "long", max_examples=int(os.environ.get("LASTHOP_HYPOTHESIS_EXAMPLES", "5000")),
    deadline=timedelta(seconds=30),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("LASTHOP_HYPOTHESIS_PROFILE", "default"))

# Simulated time of one accepted document's run, and the wall-clock time after which a run
# counts as hung.
MAX_RUN_NS = 50_000_000
HANG_S = 60.0
# Documents with more stations or flows than this are validated but not run (time).
MAX_RUN_STATIONS = 16
MAX_RUN_FLOWS = 24

KEY_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[\d+\])?(\.[A-Za-z_][A-Za-z0-9_]*(\[\d+\])?)*$")

# --- values ------------------------------------------------------------------------------
# Every key has values inside its documented range, edges included ("good": a document of only
# good values may still break a rule between keys), and values beyond the edges ("bad").


class K:
    def __init__(self, good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> None:
        self.good, self.bad = good, bad


I64 = st.integers(-(2**63), 2**63 - 1)
# Values of every TOML type, for keys that expect something else.
WRONG = st.one_of(
    st.booleans(), I64, st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12), st.lists(st.integers(-3, 3), max_size=3),
    st.dictionaries(st.sampled_from(["a", "x"]), st.integers(0, 3), max_size=2),
)


def _num(lo: float, hi: float) -> st.SearchStrategy[str]:
    return st.one_of(st.integers(int(lo), int(hi)).map(str),
                     st.floats(lo, hi, allow_nan=False).map(lambda x: f"{x:g}"))


def duration(*edges: str, bad: tuple[str, ...] = ()) -> K:
    """Mostly the documented values `edges`, sometimes any duration from 0 to 900 ms."""
    gen = st.builds(lambda n, u: f"{n / 1000:g}{u}", st.integers(0, 900_000), st.sampled_from(["us", "ms"]))
    e = st.sampled_from(edges)
    return K(st.one_of(e, e, e, gen),
             st.one_of(st.sampled_from(["-1s", "1h", "", "s", "10", "1e400s", "nan s", "inf s",
                                        "99999999999999999999s", "0.0000001ns", "1 ms", "1MS", *bad]),
                       st.integers(0, 10), st.floats(0, 10)))


def rate(*edges: str) -> K:
    gen = st.builds(lambda n, u: f"{n}{u}", _num(1, 900), st.sampled_from(["kbps", "Mbps"]))
    return K(st.one_of(st.sampled_from(["1Mbps", "100Mbps", "1Gbps", "10Gbps", *edges]), gen),
             st.one_of(st.sampled_from(["-1Mbps", "1Tbps", "", "Mbps", "100", "1e400Gbps", "0bps",
                                        "1e30Gbps", "0.1bps"]), st.integers(1, 10)))


def ints(good: list[int], bad: list[int], lo: int | None = None, hi: int | None = None) -> K:
    g: st.SearchStrategy[int] = st.sampled_from(good)
    if lo is not None and hi is not None:
        g = st.one_of(g, st.integers(lo, hi))
    return K(g, st.one_of(st.sampled_from(bad + [-1, -(2**63), 2**63 - 1]), st.floats(0, 10)))


def floats(lo: float, hi: float, edges: list[float], bad: list[float]) -> K:
    return K(st.one_of(st.sampled_from(edges), st.floats(lo, hi, allow_nan=False)),
             st.sampled_from(bad + [math.nan, math.inf, -math.inf, 1e308]))


def choice(*names: str) -> K:
    return K(st.sampled_from(names), st.sampled_from(["", "none", names[0].upper(), "x", names[0] + " "]))


BOOL = K(st.booleans(), st.sampled_from([0, 1, "true", "yes"]))


def listish(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> K:
    return K(good, st.one_of(bad, WRONG))


def _pair(a: K, b: K) -> K:
    return K(st.tuples(a.good, b.good).map(list),
             st.one_of(st.tuples(a.bad, b.good).map(list), st.tuples(a.good, b.bad).map(list),
                       st.lists(a.good, max_size=3)))


# [mac.ofdma], a table inside [mac] (HE only: with another standard it is refused).
OFDMA_KEYS: dict[str, K] = {
    "dl": BOOL, "ul": BOOL, "scheduler": choice("txq", "rr"),
    "max_users": ints([1, 2, 4, 9], [0, 75]), "ack": choice("mu-bar", "bar-ba"),
    "mu_edca_aifsn": ints([0, 1, 8, 15], [-1, 16]), "mu_edca_cw_min": ints([0, 15, 511], [2, 32768]),
    "mu_edca_cw_max": ints([511, 1023, 32767], [1000, 65535]),
    "mu_edca_timer": duration("0s", "8.192ms", "2.08896s", bad=("1ms", "2.1s")),
}
OFDMA = K(st.fixed_dictionaries({}, optional={k: v.good for k, v in OFDMA_KEYS.items()}),
          st.one_of(WRONG, st.fixed_dictionaries({}, optional={k: v.bad for k, v in OFDMA_KEYS.items()})))

# [channel.interference], a table inside [channel] (refused without a station whose errors follow
# its SNR): good values only where every key is there, since all three are required.
INTERFERENCE_KEYS: dict[str, K] = {
    "on": K(st.sampled_from(["1us", "1ms", "10ms", "2s"]), st.sampled_from(["0s", "-1ms", "10", "x"])),
    "off": K(st.sampled_from(["1us", "50ms", "1s"]), st.sampled_from(["0ms", "-1s", "1 h"])),
    "inr_db": floats(-20, 60, [-20.0, 0.0, 20.0, 60.0], [60.1, -20.1]),
}
INTERFERENCE = K(st.fixed_dictionaries({k: v.good for k, v in INTERFERENCE_KEYS.items()}),
                 st.one_of(WRONG, st.fixed_dictionaries({}, optional={k: v.bad for k, v in INTERFERENCE_KEYS.items()})))

# [channel.fading], likewise (its K-factor only with the Rician model, which needs it).
FADING_KEYS: dict[str, K] = {
    "model": choice("rayleigh", "rician"),
    "doppler_hz": floats(0, 2000, [0.0, 5.76, 2000.0], [2000.1, -0.1]),
    "k_db": floats(-20, 40, [-20.0, 10.0, 40.0], [40.1, -20.1]),
}
FADING = K(st.one_of(st.fixed_dictionaries({"model": st.just("rayleigh"), "doppler_hz": FADING_KEYS["doppler_hz"].good}),
                     st.fixed_dictionaries({"model": st.just("rician"), "doppler_hz": FADING_KEYS["doppler_hz"].good,
                                            "k_db": FADING_KEYS["k_db"].good})),
           st.one_of(WRONG, st.fixed_dictionaries({}, optional={k: v.bad for k, v in FADING_KEYS.items()})))

KEYS: dict[str, dict[str, K]] = {
    "sim": {"duration": duration("100ms", "300ms", "1s", "10s", bad=("0s",)), "warmup": duration("0s", "1ms", "10ms"),
            "seed": ints([0, 1, 7, 2**63 - 1], [-1], 0, 1000),
            "bin": duration("1ms", "10ms", "100ms", bad=("0s",))},
    "phy": {"standard": choice("ofdm", "ht", "vht", "he"), "band": choice("2.4GHz", "5GHz", "6GHz"),
            "channel_width": ints([20, 40, 80, 160], [0, 10, 60, 320]),
            "guard_interval": ints([800, 400, 1600, 3200], [0, 799, 6400]),
            "control_rate": K(st.sampled_from(["6Mbps", "9Mbps", "24Mbps", "54Mbps"]),
                              st.sampled_from(["5Mbps", "24", "55Mbps", "0bps"]))},
    "mac": {"aggregation": BOOL, "max_ampdu_mpdus": ints([1, 2, 32, 64, 256], [0, 257, 1025]),
            "max_ampdu_bytes": ints([0, 1, 65535, 1048575, 6500631], [6500632, 2**40]),
            "max_ppdu_time": duration("5.484ms", "1ms", "100us", bad=("0s", "10.1ms")),
            "retry_limit": ints([1, 7, 64], [0, 65]),
            "beacon_interval": duration("0s", "102.4ms", "1.024ms", "67.10784s", bad=("1.023ms", "67.2s")),
            "access_category": choice("BK", "BE", "VI", "VO"),
            "cw_min": ints([0, 1, 15, 1023], [1024, 2**31]), "cw_max": ints([1, 15, 1023], [1024, 2**31]),
            "aifsn": ints([2, 3, 15], [0, 1, 16]), "eifs_after_collision": BOOL,
            "txop_limit": duration("0s", "32us", "1.024ms", "8.16ms", bad=("1ms", "8.192ms")),
            "aggregation_min_rate": rate("0bps", "6.5Mbps"),
            "max_amsdu_bytes": ints([0, 3839, 7935, 11454], [1, 3838, 11455]),
            "rx_delivery": choice("subframe", "ppdu"), "ampdu_formation": choice("access", "ath9k"),
            "ofdma": OFDMA},
    "ap": {"queue_limit": ints([1, 2, 1000, 8192, 1048576], [0, 1048577]),
           "scheduler": choice("round_robin", "airtime"), "qdisc": choice("fifo", "codel", "pie", "fq_codel", "dualpi2"),
           "fq_aqm": choice("codel", "dualpi2"),
           "driver": choice("pull", "ath9k", "firmware", "mt76"),
           "hw_queue_limit": ints([1, 1024, 1048576], [0, 1048577]),
           "ath9k_qdepth": ints([1, 123, 500, 1048576], [0, 1048577]), "aql": BOOL,
           "qdisc_scope": choice("station", "interface"),
           "aql_limit_low": duration("5ms", "1ms"), "aql_limit_high": duration("12ms"),
           "aql_threshold": duration("24ms"), "buffer_sizer": choice("none", "wqm"),
           "wqm_limit": duration("2.5ms", "1ms"), "wqm_interval": duration("100ms", "10ms"),
           "wqm_variant": choice("aimd", "aiad", "miad", "mimd"),
           "pie_estimator": choice("timestamp", "dequeue_rate"),
           "dequeue_cost": duration("0s", "2us", "100us", bad=("101us", "1ms")),
           "ecn": BOOL, "ce_threshold": duration("0s", "1ms", "5ms"), "ce_threshold_l4s_only": BOOL,
           "air_ce_threshold": duration("0s", "1ms", "5ms"),
           "ack_filter": choice("off", "conservative", "aggressive"),
           "cw_min": ints([0, 1, 7, 15, 1023], [2, 1024]), "cw_max": ints([15, 63, 1023], [16, 32768]),
           "aifsn": ints([1, 2, 7, 15], [0, 16]),
           "txop_limit": duration("0s", "32us", "2.048ms", bad=("1ms", "9ms")), "tcp_small_queues": BOOL,
           "rts": choice("off", "ampdu", "always")},
    "wired": {"rate": rate(), "delay": duration("1ms", "0s", "10ms", "1s"),
              "queue_limit": ints([1, 1000, 1048576], [0, 1048577]),
              "loss": floats(0, 0.999, [0.0, 0.5, 0.999999], [1.0, -0.1]),
              "loss_up": floats(0, 0.999, [0.0, 0.1], [1.0, -0.1]),
              "qdisc": choice("fifo", "codel", "pie", "fq_codel", "dualpi2"), "server_nic": rate()},
    "channel": {"path_loss": choice("log_distance", "tgn_a", "tgn_b", "tgn_c", "tgn_d", "tgn_e", "tgn_f"),
                "exponent": floats(1, 8, [1.0, 3.5, 8.0], [0.99, 8.01, 0.0]),
                "tx_power_dbm": floats(-30, 40, [-30.0, 20.0, 40.0], [-30.1, 40.1]),
                "noise_figure_db": floats(0, 30, [0.0, 7.0, 30.0], [-0.1, 30.1]), "interference": INTERFERENCE,
                "fading": FADING},
    "aggctl": {"target_aggregation": ints([1, 32, 64], [0, 65, 257]), "interval": duration("500ms", "100ms"),
               "k0": floats(0.001, 1000, [1.0, 1000.0], [0.0, 1000.1, -1.0]),
               "initial_rate": rate("10Mbps"), "min_rate": rate("1Mbps"), "max_rate": rate("10Gbps"),
               "allocation": choice("equal_airtime", "per_station"), "hold_time": duration("1s"),
               "decay_after": duration("2s"), "decay_factor": floats(0.001, 0.999, [0.5], [0.0, 1.0]),
               "gap_threshold": duration("50us", "1us"), "clock_resolution": duration("1us", "1s", bad=("1.1s", "0s")),
               "clock_jitter": duration("0s", "10us", "1s", bad=("1.1s",)), "report_rate": BOOL,
               "report_loss": floats(0, 0.999, [0.0, 0.5], [1.0, -0.5]),
               "report_blackout": _pair(duration("10ms", "20ms"), duration("30ms", "40ms"))},
    "vwire": {"enabled": BOOL, "period": duration("2s", "10ms"),
              "efficiency": floats(0.001, 1, [0.75, 1.0], [0.0, 1.1]),
              "relay_buffer": ints([65536, 4194304], [65535, 0]), "sndbuf": ints([4096, 262144], [4095, 2**40]),
              "tsq": ints([3000, 1048576], [2999, 0]), "sample": duration("10ms", "1ms"), "work_conserving": BOOL,
              "window_clamp": ints([0, 4096, 65536], [100, 4095, 2**40])},
    "emu": {"ap_host": BOOL},
}

STATION_KEYS: dict[str, K] = {
    "count": ints([1, 2, 3], [0, 2008, 10**9]),
    "rate_control": choice("fixed", "ideal", "minstrel"), "mcs": ints([0, 3, 7, 9, 11], [-1, 12, 32]),
    "nss": ints([1, 2, 4, 8], [0, 9]), "error_model": choice("none", "fixed", "snr"),
    "per": floats(0, 0.999, [0.0, 0.1, 0.999], [1.0, -0.1]),
    "snr_db": floats(-20, 80, [30.0, 0.0, -10.0], [math.nan]),
    "queue_limit": ints([1, 1000, 1048576], [0, 1048577]), "qdisc": choice("fifo", "codel", "pie", "fq_codel", "dualpi2"),
    "distance_m": floats(0.001, 100000, [10.0, 100000.0], [0.0, -1.0, 100001.0]),
    "walk_m": listish(st.tuples(st.floats(0.5, 50), st.floats(0.5, 50)).map(list),
                      st.lists(st.floats(-1, 50), max_size=3)),
    "speed_mps": floats(0.01, 20, [1.0], [0.0, -1.0]),
    "waypoints": listish(st.lists(st.tuples(st.sampled_from(["0s", "10ms", "30ms", "1s"]),
                                            st.floats(0.5, 50)).map(list), min_size=1, max_size=3),
                         st.lists(st.tuples(st.sampled_from(["0s", "-1s", 1]), st.floats(-1, 50)).map(list),
                                  max_size=3)),
    "repeat": BOOL, "parent": ints([0, 1], [-1, 5, 2**40]), "hop_channel": ints([0, 1, 63], [64, -1]),
    "nss_change": _pair(duration("10ms", "0s"), ints([1, 2], [0, 9])),
    "device": choice("unknown", "phone", "laptop", "tv"), "gro": BOOL, "tcp_small_queues": BOOL,
    "airtime_weight": ints([1, 256, 4096, 65535], [0, -1, 65536]),
    "ampdu_mpdus_tx": ints([0, 1, 8, 64, 256], [-1, 257]), "ba_window_rx": ints([0, 1, 32, 64, 256], [-1, 257]),
    "rts": choice("off", "ampdu", "always"),
}

FLOW_KEYS: dict[str, K] = {
    "stations": K(st.one_of(st.just("all"), st.integers(0, 3), st.lists(st.integers(0, 3), min_size=1, max_size=3)),
                  st.one_of(st.just("some"), st.just(-1), st.just([]), st.lists(st.integers(-1, 9), max_size=3))),
    "direction": choice("down", "up", "cross"),
    "pattern": choice("cbr", "poisson", "saturated", "tcp", "ping", "quic", "aggctl"),
    "rate": rate("20Mbps"), "packet_size": ints([20, 84, 1228, 1378, 1500, 2304], [0, 19, 2305], 20, 2304),
    "start": duration("0s", "10ms"), "stop": duration("30ms", "50ms", "1s"), "interval": duration("10ms", "100ms"),
    "ac": choice("BK", "BE", "VI", "VO"), "cc": choice("newreno", "cubic", "bbr", "dctcp", "prague"),
    "ecn": choice("off", "classic", "l4s"),
    "bytes": ints([0, 1, 100000], [-1], 0, 10**6), "pacing": BOOL, "hystart": BOOL, "extra_acked": BOOL,
    "app": choice("bulk", "request_response"), "request_bytes": ints([1, 300], [0, -1]),
    "response_bytes": ints([1, 1000], [0, -1]), "think_time": duration("0s", "1ms"), "requests": ints([0, 1, 3], [-1]),
    "profile": choice("quic", "bquic"), "ack_policy": choice("tcp_acking", "ack_decimation", "ack_frequency"),
    "zero_rtt": BOOL, "initial_cwnd": ints([1, 10, 1000], [0, -1]),
    "page": choice("google", "live", "twitter", "wikipedia", "youtube", "amazon"),
    "connections": ints([1, 2, 3], [0, -1]), "idle": duration("0s", "10ms"), "idle_timeout": duration("30s", "100ms"),
    "reconnect": choice("1rtt", "0rtt"), "history": choice("none", "mean", "ewma"),
    "history_guard": choice("none", "rtt"), "history_events": choice("close_0rtt", "close_every_hello"), "split": BOOL, "split_wired_cc": choice("newreno", "cubic", "bbr"),
    "app_rate": rate("5Mbps"), "app_class": choice("video_sd", "video_hd", "video_4k", "bulk", "web", "voip"),
    "send_buffer": choice("none", "linux"),
    "tso": choice("off", "linux-3.17"),
    "pacer": choice("per-packet", "chromium-v39"),
    "utility": K(st.sampled_from(["step:32Mbps:10", "log:0.1", "step:1Mbps:1,2Mbps:2", "log:1"]),
                 st.one_of(st.sampled_from(["step:", "log:-1", "step:2Mbps:1,1Mbps:2", "log:0", "x"]), WRONG)),
}

for _name, _keys in (*KEYS.items(), ("stations", STATION_KEYS), ("flows", FLOW_KEYS), ("mac.ofdma", OFDMA_KEYS),
                     ("channel.interference", INTERFERENCE_KEYS), ("channel.fading", FADING_KEYS)):
    assert set(_keys) == set(SECTIONS[_name]), f"the generator's keys of [{_name}] differ from SECTIONS"

UNKNOWN = st.from_regex(r"\A[a-z][a-z_]{0,10}\Z").filter(lambda k: not any(k in v for v in SECTIONS.values()))

PHYS = (
    {"standard": "ofdm", "band": "2.4GHz", "channel_width": 20},
    {"standard": "ofdm", "band": "5GHz", "control_rate": "6Mbps"},
    {"standard": "ht", "band": "2.4GHz", "channel_width": 40, "guard_interval": 400},
    {"standard": "ht", "band": "5GHz", "channel_width": 20},
    {"standard": "vht", "channel_width": 160, "guard_interval": 400},
    {"standard": "vht", "channel_width": 20},
    {"standard": "he", "band": "6GHz", "channel_width": 160, "guard_interval": 3200},
    {"standard": "he", "band": "2.4GHz", "channel_width": 40, "guard_interval": 1600},
)

# How a document goes wrong: "good" (only values inside the documented ranges), "one" (one
# value beyond an edge or of the wrong type), "dirty" (any number of those, unknown keys).
MODES = ("good", "good", "one", "dirty")


@st.composite
def table(draw: Any, keys: dict[str, K], bad_p: int, most: int = 4) -> dict[str, Any]:
    """A table with a random subset of `keys`; each value bad with probability 1/bad_p
    (never when bad_p is 0)."""
    names = draw(st.lists(st.sampled_from(sorted(keys)), unique=True, max_size=min(len(keys), most)))
    t: dict[str, Any] = {}
    for k in names:
        bad = bad_p > 0 and draw(st.integers(0, bad_p - 1)) == 2
        t[k] = draw(st.one_of(keys[k].bad, WRONG)) if bad else draw(keys[k].good)
    if bad_p > 0 and draw(st.integers(0, 7)) == 5:
        t[draw(UNKNOWN)] = draw(WRONG)
    return t


@st.composite
def documents(draw: Any) -> dict[str, Any]:
    mode = draw(st.sampled_from(MODES))
    bad_p = 4 if mode == "dirty" else 0
    doc: dict[str, Any] = {}
    if draw(st.booleans()):
        doc["name"] = draw(st.from_regex(r"\A[a-z][a-z0-9._-]{0,12}\Z"))
    sim = draw(table(KEYS["sim"], bad_p))
    sim.setdefault("duration", draw(st.sampled_from(["100ms", "200ms", "10s"])))
    doc["sim"] = sim
    for name in ("phy", "mac", "ap", "wired", "channel", "aggctl", "vwire", "emu"):
        if draw(st.integers(0, 2)) == 0:
            doc[name] = draw(table(KEYS[name], bad_p))
    if mode != "dirty" and draw(st.booleans()):
        # A coherent PHY (standard, band, width, guard interval), then perhaps one key of it
        # redrawn, so that later sections are reached more often.
        doc["phy"] = dict(draw(st.sampled_from(PHYS)))
    doc["stations"] = draw(st.lists(table(STATION_KEYS, bad_p), min_size=1, max_size=3))
    for t in doc["stations"]:
        if t.get("rate_control", "fixed") == "fixed" and draw(st.integers(0, 9)) != 5:
            t.setdefault("mcs", draw(st.sampled_from([0, 1, 3, 5, 7])))
    doc["flows"] = draw(st.lists(table(FLOW_KEYS, bad_p, most=6), max_size=3))
    for t in doc["flows"]:
        if t.get("pattern", "cbr") in ("cbr", "poisson") and draw(st.integers(0, 9)) != 5:
            t.setdefault("rate", draw(st.sampled_from(["1Mbps", "20Mbps", "200Mbps"])))
    if mode == "one":
        # One value beyond its edge (or of the wrong type) in a section of the document.
        where = draw(st.sampled_from(["sim", "phy", "mac", "ap", "wired", "channel", "aggctl", "vwire",
                                      "emu", "stations", "flows", "name", "unknown"]))
        if where == "name":
            doc["name"] = draw(st.one_of(WRONG, st.just("x" * 201), st.just("-x"), st.just("a/b")))
        elif where == "unknown":
            doc[draw(UNKNOWN)] = draw(WRONG)
        elif where in ("stations", "flows"):
            keys = STATION_KEYS if where == "stations" else FLOW_KEYS
            if draw(st.integers(0, 9)) == 5:
                doc[where] = draw(WRONG)
            elif doc[where]:
                t = doc[where][draw(st.integers(0, len(doc[where]) - 1))]
                k = draw(st.sampled_from(sorted(keys)))
                t[k] = draw(st.one_of(keys[k].bad, WRONG))
        elif draw(st.integers(0, 9)) == 5:
            doc[where] = draw(WRONG)
        else:
            k = draw(st.sampled_from(sorted(KEYS[where])))
            doc.setdefault(where, {})[k] = draw(st.one_of(KEYS[where][k].bad, WRONG))
    if mode == "dirty" and draw(st.integers(0, 9)) == 5:
        doc[draw(st.sampled_from(["sim", "phy", "stations", "flows", "vwire"]))] = draw(WRONG)
    return doc


# --- the property ------------------------------------------------------------------------


def _cut(normalized: dict[str, Any]) -> dict[str, Any]:
    """The normalized spec with its simulated time cut to at most MAX_RUN_NS, every time kept
    inside it (as the spec_run fuzz target does)."""
    n = json.loads(json.dumps(normalized))
    sim = n["sim"]
    d = min(sim["duration_ns"], MAX_RUN_NS)
    if d < sim["duration_ns"]:
        sim["duration_ns"] = d
        sim["warmup_ns"] = min(sim["warmup_ns"], d // 2)
        sim["bin_ns"] = max(1, min(sim["bin_ns"], d))
        for f in n["flows"]:
            f["stop_ns"] = min(f["stop_ns"], d)
            f["start_ns"] = max(0, min(f["start_ns"], d - 1, f["stop_ns"] - 1))
    return n


def _run_bounded(spec_json: str, seed: int) -> str:
    """`_native.run` in a thread (it releases the GIL); a run longer than HANG_S fails."""
    from lasthop import _native

    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["json"] = _native.run(spec_json, seed, None)
        except BaseException as e:  # noqa: BLE001 - reported below
            out["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(HANG_S)
    assert not t.is_alive(), f"run still going after {HANG_S} s (hang?): {spec_json[:2000]}"
    if "error" in out:
        raise AssertionError(f"run failed: {out['error']!r}: {spec_json[:2000]}")
    return out["json"]


def _check_error(e: SpecError, doc: dict[str, Any]) -> None:
    msg = str(e)
    assert "\n" not in msg and "\r" not in msg, f"a spec error of more than one line: {msg!r}"
    assert e.path and KEY_PATH.match(e.path), f"a spec error naming no key path: {msg!r}"
    head = re.split(r"[.\[]", e.path)[0]
    assert head in doc or head in SECTIONS[""], f"a spec error naming a key not in the document: {msg!r}"
    assert len(msg) < 400, f"a spec error line too long ({len(msg)} characters): {msg[:200]!r}..."


@pytest.mark.usefixtures("simulator")
@given(doc=documents())
def test_generated_specs_are_rejected_in_one_line_or_run_deterministically(doc: dict[str, Any]) -> None:
    try:
        spec = normalize(doc, "generated")
        check_native(spec)
    except SpecError as e:
        _check_error(e, doc)
        key = re.sub(r"\[\d+\]", "[]", e.path)
        event(f"rejected: {key}")
        return
    n = spec.normalized
    if len(n["stations"]) > MAX_RUN_STATIONS or len(n["flows"]) > MAX_RUN_FLOWS:
        event("accepted: too large to run here")
        return
    cut = _cut(n)
    text = json.dumps(cut, sort_keys=True, separators=(",", ":"))
    from lasthop import _native

    if _native.validate(text):
        event("accepted: inconsistent once cut to 50 ms, not run")
        return
    event("accepted: run")
    a = _run_bounded(text, spec.seed)
    b = _run_bounded(text, spec.seed)
    assert a == b, "same spec and seed, different results"
    json.loads(a)
