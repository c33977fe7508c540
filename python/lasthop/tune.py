"""`lasthop tune`: search the levers a Linux AP really has for the configuration that cuts the
latency of a loaded cell without giving up its goodput or starving a station.

The cell (stations, rates, traffic) is the user's spec; its `[ap]` and `[mac]` as written are the
baseline (mac80211's defaults when left out). The levers, each as 802.11 and Linux define it:

- the EDCA Parameter Set the AP advertises to its stations (`mac.cw_min`, `mac.aifsn`,
  `mac.txop_limit`: hostapd `wmm_ac_be_cwmin`/`_aifs`/`_txop_limit`, IEEE 802.11-2020
  §9.4.2.28, AIFSN ≥ 2 for stations, TXOP limit in 32 µs units);
- the AP's own EDCA (`ap.cw_min`, `ap.aifsn`: hostapd `tx_queue_data2_cwmin`/`_aifs`, AIFSN ≥ 1)
  and its own TXOP limit (`ap.txop_limit`: hostapd `tx_queue_data2_burst`), within which it sends
  frame exchanges back to back to its stations (IEEE 802.11-2020 §10.23.2.8);
- AQL's per-station limits (`ap.aql_limit_low`/`_high`, mac80211's `aql_txq_limit`), with a
  driver that queues below mac80211;
- the airtime scheduler (`ap.scheduler`: mac80211's airtime DRR or round robin);
- the stations' airtime weights under it (`ap.airtime_weights`: mac80211's per-station
  `airtime_weight`, hostapd's `airtime_mode=1` with `airtime_sta_weight`), each station's
  weight from its PHY rate: equal, or larger for the slower stations (`AIRTIME_WEIGHTINGS`);
- TCP ACK filtering of the uploads' ACKs in the AP's flow queue (`ap.ack_filter`, sch_cake's
  `ack-filter`, RFC 3449 §5.2.1), with mac80211's FQ-CoDel;
- WQM sizing the AP's FIFO (`ap.buffer_sizer`, Showail & Shihada 2018; a FIFO over a driver
  without a hardware queue, as the spec rules require);
- the split proxy on the AP (`vwire`: every TCP connection of the stations split at the AP, as
  the live proxy's transparent listener takes them, with Virtual Wires' allocator on the downloads
  or splitting only; `lasthop-live vwire`) and its `TCP_WINDOW_CLAMP` (`vwire.window_clamp`: the
  most a split upload's station may have in flight, so the most its upload holds in the station's
  own queue; Linux `tcp_set_window_clamp`; it runs the proxy);
- 802.11ax OFDMA at the AP (`mac.ofdma`: single-user PPDUs, DL OFDMA, or DL and UL OFDMA with
  Basic Trigger frames and the MU EDCA Parameter Set, IEEE 802.11ax-2021 §26.5.1, §26.5.2,
  §26.2.7; the AP firmware's MU scheduler, MediaTek's mt76 `MU_CTRL` vendor command), on 802.11ax
  cells only.

The search evaluates the baseline and up to `budget` candidates drawn without repetition from
the product of the levers' values (a seeded, deterministic order), each over `seeds` seeds, as
one sweep per candidate sharing a content-addressed run cache: an interrupted search resumes
where it stopped. Each candidate is scored by three figures, means over its seeds:

- latency: the largest p99 round-trip time of the cell's ping flows (one-way p99 of its flows
  when it has no ping);
- goodput: the total goodput of its other flows;
- worst share: the smallest goodput of a station's download or upload (its bulk flows in that
  direction together) over an equal share of the cell's bulk goodput among every station's
  download and upload (`shares`). The equal share is the cell's, not the direction's: measured
  against the uploads' own total, uploads that collapse together would keep their floor while
  the downloads take the air (and the reverse). A download is also held to an equal share of
  the downloads' own goodput (`worst_down_own_share`), the floor as "no station's download below
  25 % of an equal share" reads when the uploads are left out: where the downloads carry more
  than half of the cell's goodput that share is the larger, and a choice keeps both. `uploads=False`
  leaves the uploads out of the share and of the floor: the downloads alone, over an equal share
  of theirs. `up_floor` holds the uploads to a floor of their own (by default the downloads'):
  the floor share is the least of each reading over its floor, in units of `SHARE_FLOOR`
  (`floor_share`; the worst share itself when the floors are equal), and the floors are kept
  when it reaches `SHARE_FLOOR`. Where no choice keeps every upload at the downloads' floor, a
  lower one says what the uploads give up for every download to keep theirs.

The Pareto set over (lower latency, higher goodput, higher worst share) is reported. The choice
is the candidate with the lowest latency among those keeping ≥ 95 % of the baseline's goodput
and every station's download and upload ≥ 25 % of an equal share (`GOODPUT_KEEP`,
`SHARE_FLOOR`), or, when none keeps them, the one nearest them (`shortfall`); then a local
search moves it one lever at a time while that ranks better (`improve`). A choice that keeps the
floors is a member of the Pareto set. The ablation reruns the choice without each of its levers:
what each lever buys.

A choice made on few seeds is the luckiest of many candidates on those seeds (the winner's
curse: its figures favour it, and a candidate that keeps a floor by a hair on two seeds often
misses it on more). With `confirm` seeds, the `finalists` best by that order run again over
`confirm` seeds (the search's own runs among them) and the choice is the best of them there;
then the baseline and the choice run over `confirm` further seeds that took no part in any
choice (`sim.seed + confirm` onwards), and those figures are the report's `confirmed` — the
ones a judgement of the choice should rest on.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .spec import NAMES

GOODPUT_KEEP = 0.95
SHARE_FLOOR = 0.25
# A candidate's figures (means over its seeds): the three it is judged by, then what they are made of.
FIGURES = ("latency_ms", "goodput_bps", "worst_share", "worst_down_share", "worst_up_share", "down_bps", "up_bps",
           "worst_down_own_share", "floor_share")


@dataclass(frozen=True)
class Lever:
    """One knob: its spec key, the values searched (the first: the default), and what an
    operator sets for it."""

    key: str
    values: tuple[Any, ...]
    operator: str


# The levers, with values 802.11 allows (spec rules check them again).
LEVERS: tuple[Lever, ...] = (
    Lever("mac.cw_min", (15, 31, 63), "hostapd.conf wmm_ac_be_cwmin (ECWmin: log2(cw_min + 1))"),
    Lever("mac.aifsn", (3, 5, 7), "hostapd.conf wmm_ac_be_aifs"),
    Lever("mac.txop_limit", ("0s", "512us", "1.024ms", "2.048ms"), "hostapd.conf wmm_ac_be_txop_limit (units of 32 us)"),
    Lever("ap.cw_min", (15, 7, 3, 31, 63), "hostapd.conf tx_queue_data2_cwmin"),
    Lever("ap.aifsn", (3, 2, 1, 5, 7), "hostapd.conf tx_queue_data2_aifs"),
    # hostapd's burst is in tenths of a millisecond, sent to the kernel as (tenths * 100 + 16) / 32
    # units of 32 us (driver_nl80211's NL80211_TXQ_ATTR_TXOP): 1.0, 2.0 and 4.0 ms give these.
    Lever("ap.txop_limit", ("0s", "992us", "2.016ms", "4ms"), "hostapd.conf tx_queue_data2_burst (tenths of a ms)"),
    Lever("ap.aql", ("5ms/12ms", "2ms/4ms", "1ms/2ms"), "debugfs: /sys/kernel/debug/ieee80211/phy0/aql_txq_limit"),
    Lever("ap.scheduler", ("airtime", "round_robin"), "mac80211 airtime fairness: debugfs airtime_flags"),
    Lever("ap.airtime_weights", ("equal", "1/sqrt(rate)", "1/rate"),
          "hostapd.conf airtime_mode=1, airtime_sta_weight=<station MAC> <weight> (mac80211's airtime weight)"),
    Lever("ap.ack_filter", NAMES["ap.ack_filter"], "tc: sch_cake's ack-filter / ack-filter-aggressive"),
    Lever("ap.buffer_sizer", NAMES["ap.buffer_sizer"], "lasthop-live wqm (WQM sizes the AP's FIFO; ath9k-style drivers)"),
    Lever("vwire", ("off", "split", "vwire"), "lasthop-live vwire (the split proxy; --no-vwire: split only)"),
    Lever("vwire.window_clamp", ("off", 65536, 131072, 262144),
          "lasthop-live vwire --window-clamp BYTES (TCP_WINDOW_CLAMP on the proxy's sockets)"),
    Lever("mac.ofdma", ("off", "dl", "dl+ul", "dl+ul (8 users)"),
          "mt76-vendor wlan0 set mu onoff=<DL OFDMA bit 0, UL OFDMA bit 1>, set ap_wireless nusers_ofdma=<users>; "
          "hostapd.conf he_mu_edca_ac_be_*"),
)
# `mac.ofdma`'s values as the spec's [mac.ofdma] table (the rest of it at the spec's defaults: up
# to 4 users per MU PPDU unless stated, the AP driver's service order, MU-BAR acknowledgment,
# OpenWrt's MU EDCA set for AC_BE); "off": no table, single-user PPDUs.
OFDMA_MODES: dict[str, dict[str, Any]] = {"dl": {"dl": True, "ul": False}, "dl+ul": {"dl": True, "ul": True},
                                          "dl+ul (8 users)": {"dl": True, "ul": True, "max_users": 8}}

# `ap.airtime_weights`' values: each station's weight is mac80211's default 256 µs times (the
# fastest station's PHY rate / its own)^exponent. Airtime fairness gives backlogged stations equal
# airtime, so their downloads follow their rates; with "1/rate" they get airtime in inverse
# proportion to their rates, so equal goodput at equal efficiency (the throughput fairness of
# plain round robin, with the uplink's airtime still charged); "1/sqrt(rate)" is between.
AIRTIME_WEIGHTINGS: dict[str, float] = {"equal": 0.0, "1/sqrt(rate)": 0.5, "1/rate": 1.0}


@functools.cache
def airtime_weight_range() -> tuple[int, int, int]:
    """`stations[].airtime_weight`'s default, least and largest value (mac80211's 256 µs;
    nl80211's u16), as the spec reader states them."""
    from .native import native

    doc = {"sim": {"duration": "1s"}, "stations": [{"mcs": 0}], "flows": []}
    default, frag = next((d, f) for key, d, f, _ in native().spec_reads(doc) if key.endswith("].airtime_weight"))
    bounds = json.loads(frag)
    return json.loads(default), bounds["minimum"], bounds["maximum"]


class TuneError(Exception):
    """A user error (one line)."""


@dataclass
class Candidate:
    """One configuration: the lever values that differ from the baseline's (empty: baseline)."""

    values: dict[str, Any]
    latency_ms: float = math.nan
    goodput_bps: float = math.nan
    worst_share: float = math.nan
    worst_down_share: float = math.nan
    worst_up_share: float = math.nan
    down_bps: float = math.nan
    up_bps: float = math.nan
    worst_down_own_share: float = math.nan
    floor_share: float = math.nan
    seeds: list[dict[str, float]] = field(default_factory=list)
    # Why the spec rules refuse this combination of levers (None: a valid spec).
    refused: str | None = None

    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.values.items()) or "baseline"

    def figures(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in FIGURES}


def load_cell(path: str | Path) -> dict[str, Any]:
    """The cell's spec document (validated: a bad spec raises SpecError / SpecFileError)."""
    from .spec import load_spec_text, parse_toml, read_spec_file

    text, _ = read_spec_file(path)
    doc = parse_toml(text, str(path))
    load_spec_text(text, str(path))
    flows = doc.get("flows") or []
    if not isinstance(flows, list) or not flows:
        raise TuneError(f"{path}: a cell with no traffic ([[flows]]): nothing to tune")
    return doc


def refusal(doc: dict[str, Any]) -> str | None:
    """Why the spec rules refuse `doc` (one line), or None when they accept it."""
    from .spec import SpecError, normalize

    try:
        normalize(doc, rules=True)
    except SpecError as e:
        return f"{e.path}: {e.allowed}"
    return None


def applicable(doc: dict[str, Any]) -> list[Lever]:
    """The levers this cell has: those whose every value changes its spec and is accepted by
    the spec rules (e.g. AQL only with a driver that queues below mac80211, WQM only over a
    FIFO, the split proxy only with TCP flows, its window clamp only with TCP uploads)."""
    def accepted(changed: dict[str, Any]) -> bool:
        return changed != doc and refusal(changed) is None

    out = [lv for lv in LEVERS if all(accepted(apply(doc, {lv.key: v})) for v in lv.values[1:])]
    return [_distinct_ofdma(doc, lv) if lv.key == "mac.ofdma" else lv for lv in out]


def _distinct_ofdma(doc: dict[str, Any], lever: Lever) -> Lever:
    """`lever` without the OFDMA values whose larger user count changes nothing here: a multi-user
    PPDU has at most one user per station, so when the spec's default count (`max_users`) takes
    every station of the cell, a larger one is the same configuration."""
    norm = _normalized(apply(doc, {"mac.ofdma": "dl+ul"}))
    default_users, stations = norm["mac"]["ofdma"]["max_users"], len(norm["stations"])
    keep = tuple(v for v in lever.values
                 if OFDMA_MODES.get(v, {}).get("max_users", default_users) <= default_users or stations > default_users)
    return dataclasses.replace(lever, values=keep)


def apply(doc: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """The cell's spec with the lever `values` set."""
    out = copy.deepcopy(doc)
    for key, v in values.items():
        if key == "vwire":
            # The split proxy on the AP: every TCP connection split there; Virtual Wires'
            # allocator on the split downloads, or splitting only.
            if v != "off":
                _split_all(out)
            if v == "vwire":
                out["vwire"] = {**out.get("vwire", {}), "enabled": True}
            continue
        if key == "vwire.window_clamp":
            # The proxy's window clamp: it takes effect on split uploads, and running the proxy
            # splits every TCP connection; a [vwire] table written here leaves the allocator as
            # the `vwire` lever sets it (off when that lever is "off" or "split").
            if v != "off" and _split_all(out, uploads_only=True):
                out["vwire"] = {"enabled": False, **out.get("vwire", {}), "window_clamp": v}
            continue
        if key == "ap.airtime_weights":
            _weigh(out, v)
            continue
        if key == "mac.ofdma":
            mac = out.setdefault("mac", {})
            mac.pop("ofdma", None)
            if v != "off":
                mac["ofdma"] = dict(OFDMA_MODES[v])
            continue
        if key == "ap.aql":
            lo, hi = v.split("/")
            out.setdefault("ap", {}).update({"aql_limit_low": lo, "aql_limit_high": hi})
            continue
        sec, k = key.split(".")
        out.setdefault(sec, {})[k] = v
    return out


def _split_all(doc: dict[str, Any], uploads_only: bool = False) -> bool:
    """Split every TCP bulk flow of `doc` at the AP's proxy (downloads and uploads: the proxy's
    listener takes every connection); with `uploads_only`, only when there is an upload to split
    (a window clamp changes nothing else). Whether any was split."""
    tcp = [f for f in doc.get("flows") or [] if f.get("pattern") == "tcp" and f.get("app", "bulk") == "bulk"
           and f.get("direction", "down") in ("down", "up")]
    if uploads_only and not any(f.get("direction") == "up" for f in tcp):
        return False
    for f in tcp:
        f["split"] = True
    return bool(tcp)


def airtime_weights(doc: dict[str, Any], how: str) -> list[int]:
    """Each station's airtime weight (µs) under `how` (`AIRTIME_WEIGHTINGS`), from the PHY rates of
    the spec's stations (`station_rates`: their MCS and streams); a station behind a relay keeps
    the default, as the weight is the AP's."""
    from .native import native

    default, least, most = airtime_weight_range()
    norm = _normalized(doc)
    rates = native().station_rates(json.dumps(norm))
    weighed = [st.get("parent") is None and r > 0 for r, st in zip(rates, norm["stations"])]
    top = max((r for r, w in zip(rates, weighed) if w), default=0)
    exp = AIRTIME_WEIGHTINGS[how]
    if exp == 0.0 or not top:
        return [default] * len(rates)
    return [min(most, max(least, round(default * (top / r) ** exp))) if w else default
            for r, w in zip(rates, weighed)]


def _weigh(doc: dict[str, Any], how: str) -> None:
    """Set `airtime_weight` on the stations of `doc` (in place) as `how` gives them: the
    `[[stations]]` groups of `count` become one table per station where a weight differs from the
    default (nothing changes where none does)."""
    weights, default = airtime_weights(doc, how), airtime_weight_range()[0]
    if all(w == default for w in weights):
        return
    each = [{k: x for k, x in st.items() if k != "count"} for st in doc.get("stations") or []
            for _ in range(st.get("count", 1))]
    for st, w in zip(each, weights):
        st.pop("airtime_weight", None)
        if w != default:
            st["airtime_weight"] = w
    doc["stations"] = each


def candidates(levers: list[Lever], budget: int, seed: int) -> list[dict[str, Any]]:
    """Up to `budget` distinct lever settings in a deterministic random order (the first value of
    every lever is the mac80211/hostapd default and is left out of the settings)."""
    space = 1
    for lv in levers:
        space *= len(lv.values)
    rng = random.Random(seed)
    picks = rng.sample(range(space), min(budget, space))
    out = []
    for idx in picks:
        vals = {}
        for lv in levers:
            idx, i = divmod(idx, len(lv.values))
            if i:
                vals[lv.key] = lv.values[i]
        if vals:
            out.append(vals)
    return out


def shares(down: list[float], up: list[float], uploads: bool = True,
           up_floor: float = SHARE_FLOOR) -> dict[str, float]:
    """The worst share and its parts, from each station's download and upload goodput (b/s; a
    station without bulk traffic in a direction is left out of that list): each over an equal
    share of the cell's bulk goodput among the station-directions counted (the downloads alone
    when `uploads` is False); and the worst download over an equal share of the downloads'
    goodput whatever `uploads` says (`worst_down_own_share`: the floor as the downloads alone
    set it). The worst share is the least of them: a choice keeps the floor on both readings.
    The floor share is the least of the readings each over its floor (`up_floor` for the
    uploads, `SHARE_FLOOR` for the downloads), times `SHARE_FLOOR`: the floors hold when it
    reaches `SHARE_FLOOR`; with equal floors it is the worst share."""
    counted = down + up if uploads else down
    total = sum(counted)
    own = min(down) / (sum(down) / len(down)) if down and sum(down) > 0 else math.nan
    if not counted or total <= 0:
        return {"worst_share": math.nan, "worst_down_share": math.nan, "worst_up_share": math.nan,
                "worst_down_own_share": own, "floor_share": math.nan}
    equal = total / len(counted)
    part = lambda xs: min(xs) / equal if xs else math.nan  # noqa: E731
    worst = min(counted) / equal
    worst = min(worst, own) if math.isfinite(own) else worst
    # Each reading against its own floor (an upload floor of 0 holds the uploads to none); with
    # equal floors the scale is exactly 1 and this is the worst share.
    readings = [x for x in (part(down), own) if math.isfinite(x)]
    if uploads and up:
        readings.append(part(up) * SHARE_FLOOR / up_floor if up_floor > 0 else math.inf)
    floor = min(readings)
    return {"worst_share": worst, "worst_down_share": part(down), "worst_up_share": part(up),
            "worst_down_own_share": own, "floor_share": floor}


def score(doc: dict[str, Any], uploads: bool = True, up_floor: float = SHARE_FLOOR) -> dict[str, float]:
    """The figures of one run's result document."""
    flows = doc["data"]["flows"]
    pings = [f for f in flows if f.get("pattern") == "ping"]
    lat = max((f["delay_ns"]["p99"] for f in (pings or flows) if f["delay_ns"].get("samples")), default=math.nan)
    bulk = [f for f in flows if f.get("pattern") != "ping"]
    by: dict[str, dict[int, float]] = {"down": {}, "up": {}}
    for f in bulk:
        if f.get("direction") in by:
            d = by[f["direction"]]
            d[f["station"]] = d.get(f["station"], 0.0) + f["goodput_bps"]
    down, up = list(by["down"].values()), list(by["up"].values())
    return {"latency_ms": lat / 1e6, "goodput_bps": sum(f["goodput_bps"] for f in bulk),
            "down_bps": sum(down), "up_bps": sum(up), **shares(down, up, uploads, up_floor)}


@dataclass
class Search:
    """What every evaluation of one search shares: the cell, the seeds per candidate, where the
    runs go and how they run, whether the uploads count in the shares, and their floor."""

    cell: dict[str, Any]
    seeds: int
    out: Path
    jobs: int | None = None
    ray: str | None = None
    uploads: bool = True
    up_floor: float = SHARE_FLOOR
    # The run cache (None: `out`/runs); searches of one cell may share one.
    cache: Path | None = None
    # Every spec run in this search (the cell with a setting's values), by its canonical text,
    # in the order first tried.
    tried: dict[str, Candidate] = field(default_factory=dict)

    def candidate(self, values: dict[str, Any]) -> Candidate:
        """The candidate with these lever values, run the first time its spec is asked for:
        settings that make the same spec (the split proxy named beside its window clamp, which
        runs it anyway) are one candidate, under the values it was first asked for."""
        spec = apply(self.cell, values)
        key = json.dumps(spec, sort_keys=True)
        c = self.tried.get(key)
        if c is None:
            c = self.tried[key] = Candidate(dict(values))
            self.evaluate(c, spec)
        return c

    def evaluate(self, cand: Candidate, spec: dict[str, Any] | None = None) -> None:
        """Run `cand` (its spec, when the caller has made it already) over the seeds (cached runs
        are reused) and set its figures."""
        from .sweeps import Sweep, run_sweep

        spec = apply(self.cell, cand.values) if spec is None else spec
        # Levers each valid alone may not combine (the spec rules say why): not a candidate.
        cand.refused = refusal(spec)
        if cand.refused:
            return
        tag = hashlib.sha256(json.dumps(cand.values, sort_keys=True).encode()).hexdigest()[:12]
        # One sweep directory per seed range (the search's, the finalists', the held-out ones).
        tag += f"-{first_seed(spec)}x{self.seeds}"
        res = run_sweep(Sweep(base=spec, seeds=self.seeds), self.out / "candidates" / tag, jobs=self.jobs,
                        ray=self.ray, progress=False, cache=self.cache or self.out / "runs")
        cand.seeds = [score(res.load(r["point"], r["seed"]), self.uploads, self.up_floor) for r in res.runs]
        for k in FIGURES:
            vals = [s[k] for s in cand.seeds if math.isfinite(s[k])]
            setattr(cand, k, sum(vals) / len(vals) if vals else math.nan)


def _share(c: Candidate) -> float:
    """The worst share for comparisons (a cell without bulk flows has none: all tie)."""
    return c.worst_share if math.isfinite(c.worst_share) else 0.0


def dominates(a: Candidate, b: Candidate) -> bool:
    ge = a.latency_ms <= b.latency_ms and a.goodput_bps >= b.goodput_bps and _share(a) >= _share(b)
    gt = a.latency_ms < b.latency_ms or a.goodput_bps > b.goodput_bps or _share(a) > _share(b)
    return ge and gt


def pareto(cands: list[Candidate]) -> list[Candidate]:
    """The candidates no other dominates, among those that ran (refused ones have no figures)."""
    ran = [c for c in cands if math.isfinite(c.latency_ms) and math.isfinite(c.goodput_bps)]
    return sorted((c for c in ran if not any(dominates(o, c) for o in ran)), key=lambda c: c.latency_ms)


def shortfall(c: Candidate, base: Candidate) -> float:
    """How far `c` is from tune's floors (0: it keeps them): the goodput's shortfall below
    `GOODPUT_KEEP` of the baseline's, plus the floor share's below `SHARE_FLOOR`, as fractions."""
    if not math.isfinite(c.goodput_bps):
        return math.inf
    gap = max(0.0, GOODPUT_KEEP - c.goodput_bps / base.goodput_bps) if base.goodput_bps > 0 else 0.0
    if math.isfinite(c.floor_share):
        gap += max(0.0, SHARE_FLOOR - c.floor_share)
    return gap


def rank(c: Candidate, base: Candidate) -> tuple[float, float, float, float]:
    """The order of preference: nearest the floors (all that keep them tie at 0), then the lower
    latency, then the higher goodput and worst share (so the best is never dominated)."""
    lat = c.latency_ms if math.isfinite(c.latency_ms) else math.inf
    good = c.goodput_bps if math.isfinite(c.goodput_bps) else 0.0
    return (shortfall(c, base), lat, -good, -_share(c))


def choose(base: Candidate, cands: list[Candidate]) -> tuple[Candidate, bool]:
    """The lowest-latency candidate that keeps the floors, else the one nearest them (False)."""
    best = min(cands, key=lambda c: rank(c, base))
    return best, shortfall(best, base) == 0.0


def neighbours(values: dict[str, Any], levers: list[Lever]) -> list[dict[str, Any]]:
    """Every setting one lever away from `values` (a lever back at its default: left out)."""
    out = []
    for lv in levers:
        for v in lv.values:
            if values.get(lv.key, lv.values[0]) == v:
                continue
            nb = {k: x for k, x in values.items() if k != lv.key}
            if v != lv.values[0]:
                nb[lv.key] = v
            out.append({x.key: nb[x.key] for x in levers if x.key in nb})
    return out


def _ecw(cw: int) -> int:
    """A contention window as hostapd writes it: its exponent, CW = 2^ECW − 1 (§9.4.2.28)."""
    return int(math.log2(cw + 1))


def hostapd_fragment(values: dict[str, Any], ofdma: dict[str, Any] | None = None,
                     weights: list[int] | None = None) -> list[str]:
    """What an operator writes into hostapd.conf for the chosen EDCA values (BE); with UL OFDMA,
    the MU EDCA Parameter Set of `ofdma` (the chosen spec's normalized `mac.ofdma`) as hostapd's
    `he_mu_edca_ac_be_*` (ECW as for EDCA; the timer in units of 8 TU, §9.4.2.245); with airtime
    weights, hostapd's static airtime policy (`airtime_mode=1`, one `airtime_sta_weight` per
    station whose weight is not the default, `weights` in the spec's station order)."""
    lines = []
    if values.get("ap.airtime_weights", "equal") != "equal" and weights:
        lines.append("airtime_mode=1")
        lines += [f"airtime_sta_weight=<MAC of station {i}> {w}" for i, w in enumerate(weights)
                  if w != airtime_weight_range()[0]]
    if values.get("mac.ofdma", "off") != "off" and ofdma and ofdma.get("ul"):
        lines += [f"he_mu_edca_ac_be_aifsn={ofdma['mu_edca_aifsn']}",
                  f"he_mu_edca_ac_be_ecwmin={_ecw(ofdma['mu_edca_cw_min'])}",
                  f"he_mu_edca_ac_be_ecwmax={_ecw(ofdma['mu_edca_cw_max'])}",
                  f"he_mu_edca_ac_be_timer={ofdma['mu_edca_timer_ns'] // (8 * 1_024_000)}"]
    if "mac.cw_min" in values:
        lines.append(f"wmm_ac_be_cwmin={_ecw(values['mac.cw_min'])}")
    if "mac.aifsn" in values:
        lines.append(f"wmm_ac_be_aifs={values['mac.aifsn']}")
    if "mac.txop_limit" in values:
        from .units import parse_duration

        lines.append(f"wmm_ac_be_txop_limit={parse_duration(values['mac.txop_limit']) // 32_000}")
    if "ap.cw_min" in values:
        lines.append(f"tx_queue_data2_cwmin={values['ap.cw_min']}")
    if "ap.aifsn" in values:
        lines.append(f"tx_queue_data2_aifs={values['ap.aifsn']}")
    if "ap.txop_limit" in values:
        lines.append(f"tx_queue_data2_burst={hostapd_burst(values['ap.txop_limit'])}")
    return lines


def hostapd_burst(txop: str) -> str:
    """hostapd's `tx_queue_data*_burst` (ms, to a tenth) that gives the kernel the TXOP limit
    `txop`: driver_nl80211 sends (tenths * 100 + 16) // 32 units of 32 us."""
    from .units import parse_duration

    units = parse_duration(txop) // 32_000
    tenths = next(t for t in range(0, 82) if (t * 100 + 16) // 32 >= units)
    if (tenths * 100 + 16) // 32 != units:
        raise ValueError(f"{txop}: no hostapd burst gives this TXOP limit")
    return f"{tenths / 10:.1f}"


def host_commands(values: dict[str, Any]) -> list[str]:
    """Commands for the levers that are not hostapd's."""
    out = []
    if "ap.aql" in values:
        from .units import parse_duration

        lo, hi = (parse_duration(x) // 1000 for x in values["ap.aql"].split("/"))
        # mac80211's aql_txq_limit_write: "<ac> <low us> <high us>", AC_BE = 2 (IEEE80211_AC_BE).
        out.append(f"echo '2 {lo} {hi}' > /sys/kernel/debug/ieee80211/phy0/aql_txq_limit")
    if values.get("ap.scheduler") == "round_robin":
        out.append("echo 0 > /sys/kernel/debug/ieee80211/phy0/airtime_flags")
    if values.get("ap.buffer_sizer") == "wqm":
        out.append("lasthop-live wqm --phy phy0            # docs/live.md (systemd unit there)")
    clamp = values.get("vwire.window_clamp", "off")
    if values.get("vwire", "off") != "off" or clamp != "off":
        flag = "" if values.get("vwire") == "vwire" else " --no-vwire"
        flag += "" if clamp == "off" else f" --window-clamp {clamp}"
        out.append(f"lasthop-live vwire --wifi-iface wlan0{flag}   # docs/live.md (systemd unit there)")
    if values.get("mac.ofdma", "off") != "off":
        # MediaTek's mt76 vendor command MU_CTRL: a bitmap, DL OFDMA bit 0, UL OFDMA bit 1 (the
        # firmware schedules the RUs and the Trigger frames).
        mode = OFDMA_MODES[values["mac.ofdma"]]
        bits = 3 if mode["ul"] else 1
        out.append(f"mt76-vendor wlan0 set mu onoff={bits}   # the AP firmware's OFDMA: "
                   + ("DL and UL (Trigger frames)" if bits == 3 else "DL only"))
        if "max_users" in mode:
            out.append(f"mt76-vendor wlan0 set ap_wireless nusers_ofdma={mode['max_users']}   # users per MU PPDU")
    if values.get("ap.ack_filter", "off") != "off":
        mode = "ack-filter" if values["ap.ack_filter"] == "conservative" else "ack-filter-aggressive"
        # mac80211 takes every packet into its own queues, so a qdisc above it holds nothing to
        # filter unless it shapes: cake's shaper just below the link rate moves the queue there.
        out.append("# the ACK filter works where packets wait: cake shaping just below the link's rate")
        out.append(f"tc qdisc replace dev wlan0 root cake bandwidth <rate> besteffort {mode}")
    return out


def write_toml(doc: dict[str, Any]) -> str:
    """A spec dict back as TOML (tables of scalars and arrays of tables, as specs are)."""
    def val(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(val(x) for x in v) + "]"
        return repr(v)

    def table(header: str, name: str, t: dict[str, Any]) -> list[str]:
        # A table's keys, then its sub-tables as [name.key] (e.g. [mac.ofdma]).
        out = ["", header] + [f"{k} = {val(v)}" for k, v in t.items() if not isinstance(v, dict)]
        for k, v in t.items():
            if isinstance(v, dict):
                out += table(f"[{name}.{k}]", f"{name}.{k}", v)
        return out

    lines: list[str] = []
    for k, v in doc.items():
        if not isinstance(v, (dict, list)) or (isinstance(v, list) and not any(isinstance(x, dict) for x in v)):
            lines.append(f"{k} = {val(v)}")
    for k, v in doc.items():
        if isinstance(v, dict):
            lines += table(f"[{k}]", k, v)
        elif isinstance(v, list) and any(isinstance(x, dict) for x in v):
            for item in v:
                lines += table(f"[[{k}]]", k, item)
    return "\n".join(lines) + "\n"


def tune(path: str | Path, out: Path, budget: int, seeds: int, jobs: int | None = None,
         ray: str | None = None, progress: Callable[..., None] | None = None,
         exclude: tuple[str, ...] = (), uploads: bool = True, confirm: int = 0,
         finalists: int = 1, up_floor: float | None = None, cache: Path | None = None) -> dict[str, Any]:
    """Run the search; write `out`/tune.json, chosen.toml, chosen.txt; return the report.
    `exclude`: lever keys left out of the search; `uploads=False`: the uploads left out of the
    shares and of the floor; `up_floor`: the uploads' floor (a fraction of an equal share; None:
    the downloads'); `cache`: the run cache (None: `out`/runs); `confirm` > `seeds`: the
    `finalists` best candidates (1: the search's own choice alone) run again over that many
    seeds (the search's own runs reused) and the choice is the best of them there; the baseline
    and the choice then run over `confirm` held-out seeds, reported as `confirmed` (the module's
    docstring says why)."""
    if budget < 1:
        raise TuneError(f"--budget {budget}: at least 1 candidate")
    if confirm and confirm <= seeds:
        raise TuneError(f"--confirm {confirm}: more seeds than --seeds ({seeds}), or 0 for none")
    if finalists < 1:
        raise TuneError(f"--finalists {finalists}: at least 1 (1: the search's own choice)")
    up_floor = SHARE_FLOOR if up_floor is None else up_floor
    if not 0.0 <= up_floor <= 1.0:
        raise TuneError(f"--upload-floor {up_floor:g}: a fraction of an equal share in 0..1")
    if up_floor != SHARE_FLOOR and not uploads:
        raise TuneError("--upload-floor with --ignore-uploads: the uploads have no floor to set")
    cell = load_cell(path)
    search = Search(cell, seeds, out, jobs, ray, uploads, up_floor, cache)
    levers = [lv for lv in applicable(cell) if lv.key not in exclude]
    draw = [{}] + candidates(levers, budget, seed=first_seed(cell))
    out.mkdir(parents=True, exist_ok=True)
    for i, vals in enumerate(draw):
        c = search.candidate(vals)
        if progress:
            progress(i + 1, len(draw), c, phase="random draw")
    base = search.candidate({})
    chosen, _ = choose(base, list(search.tried.values()))
    chosen = improve(search, chosen, base, levers, progress)
    finals: list[dict[str, Any]] = []
    if confirm:
        chosen, finals = final(Search(cell, confirm, out, jobs, ray, uploads, up_floor, cache), search, chosen, finalists, progress)
    met = shortfall(chosen, base) == 0.0
    cands = list(search.tried.values())
    front = pareto(cands)
    report = {
        "spec": str(path), "seeds": seeds, "budget": budget, "levers": [lv.key for lv in levers],
        "goodput_keep": GOODPUT_KEEP, "share_floor": SHARE_FLOOR, "upload_floor": up_floor if uploads else None,
        "uploads_in_share": uploads,
        "candidates": [{"values": c.values, **c.figures(), "pareto": c in front,
                        **({"refused": c.refused} if c.refused else {})} for c in cands],
        "baseline": base.figures(),
        "chosen": {"values": chosen.values, **chosen.figures(), "meets_constraints": met,
                   "latency_gain": base.latency_ms / chosen.latency_ms if chosen.latency_ms > 0 else math.nan},
        "ablation": ablation(search, chosen),
    }
    if confirm:
        report["finalists"] = finals
        report["confirmed"] = confirmed(Search(held_out(cell, confirm), confirm, out, jobs, ray, uploads, up_floor, cache),
                                        chosen, progress)
    spec = apply(cell, chosen.values)
    spec["name"] = f"{cell.get('name', 'cell')}-tuned"
    _atomic(out / "chosen.toml", "# lasthop tune's chosen configuration for " + str(path) + "\n" + write_toml(spec))
    weights = [st.get("airtime_weight", airtime_weight_range()[0]) for st in _normalized(spec)["stations"]]
    text = ["# hostapd.conf (the BE queue)"] + (hostapd_fragment(chosen.values, _ofdma(spec), weights) or ["# (no change)"])
    text += ["", "# on the AP host"] + (host_commands(chosen.values) or ["# (no change)"])
    _atomic(out / "chosen.txt", "\n".join(text) + "\n")
    _atomic(out / "tune.json", json.dumps(report, indent=1, sort_keys=True) + "\n")
    return report


def _normalized(doc: dict[str, Any]) -> dict[str, Any]:
    """The spec `doc` normalized (every key at its value or default), as a dict."""
    from .spec import normalize

    return json.loads(normalize(doc).to_json())


def _ofdma(doc: dict[str, Any]) -> dict[str, Any] | None:
    """The spec's normalized `mac.ofdma`, or None."""
    return _normalized(doc)["mac"].get("ofdma") if "ofdma" in (doc.get("mac") or {}) else None


def improve(search: Search, chosen: Candidate, base: Candidate, levers: list[Lever],
            progress: Callable[..., None] | None = None) -> Candidate:
    """A local search from the random draw's best: try every setting one lever away (another
    value, or the lever back at its default) and move to the best of them while that ranks
    better (`rank`: nearer the floors, then lower latency), until none does. A random draw sets
    levers that do not help; this drops them, and finds values the draw missed. Every setting
    is run once (`Search.candidate`)."""
    step = 0
    while True:
        step += 1
        nbs = neighbours(chosen.values, levers)
        tried = []
        for i, vals in enumerate(nbs):
            tried.append(search.candidate(vals))
            if progress:
                progress(i + 1, len(nbs), tried[-1], phase=f"local search, step {step}")
        best = min(tried, key=lambda c: rank(c, base), default=chosen)
        if rank(best, base) >= rank(chosen, base):
            return chosen
        chosen = best


def ablation(search: Search, chosen: Candidate) -> list[dict[str, Any]]:
    """Which lever buys what: the chosen configuration without each of its levers in turn (each
    a setting the local search has run already)."""
    return [{"without": key, **search.candidate({k: v for k, v in chosen.values.items() if k != key}).figures()}
            for key in chosen.values]


def final(wide: Search, search: Search, chosen: Candidate, k: int,
          progress: Callable[..., None] | None = None) -> tuple[Candidate, list[dict[str, Any]]]:
    """The choice among the `k` best candidates of `search` (by `rank`, the local search's
    choice first among equals) rerun over `wide.seeds` seeds: the best of them there, returned
    with its figures on the search's seeds (the ablation and the Pareto set are on those), and
    every finalist's figures over the wider seeds."""
    base = search.candidate({})
    ran = [c for c in search.tried.values() if c.values and math.isfinite(c.latency_ms)]
    ordered = [chosen] + sorted((c for c in ran if c is not chosen), key=lambda c: rank(c, base))
    picks = ordered[:k]
    wide_base = wide.candidate({})
    again = []
    for i, c in enumerate(picks):
        again.append(wide.candidate(c.values))
        if progress:
            progress(i + 1, len(picks), again[-1], phase=f"finalists on {wide.seeds} seeds")
    best = min(range(len(picks)), key=lambda i: (rank(again[i], wide_base), i))
    rows = [{"values": c.values, **w.figures(), "meets_constraints": shortfall(w, wide_base) == 0.0,
             "chosen": i == best} for i, (c, w) in enumerate(zip(picks, again))]
    return picks[best], rows


def first_seed(doc: dict[str, Any]) -> int:
    """The spec document's `sim.seed` (1 when unset): a sweep over it runs its seeds from there."""
    return (doc.get("sim") or {}).get("seed", 1)


def held_out(cell: dict[str, Any], skip: int) -> dict[str, Any]:
    """The cell with its seeds moved past the `skip` the choice was made on."""
    out = copy.deepcopy(cell)
    out.setdefault("sim", {})["seed"] = first_seed(cell) + skip
    return out


def confirmed(search: Search, chosen: Candidate, progress: Callable[..., None] | None = None) -> dict[str, Any]:
    """The baseline and the choice over `search.seeds` seeds that took no part in the choice
    (`held_out`): the gain and the floors as they hold beyond the seeds chosen on."""
    base, pick = search.candidate({}), search.candidate(chosen.values)
    if progress:
        progress(2, 2, pick, phase=f"confirmation on {search.seeds} held-out seeds")
    return {"seeds": search.seeds, "first_seed": first_seed(search.cell), "baseline": base.figures(), "chosen": pick.figures(),
            "meets_constraints": shortfall(pick, base) == 0.0,
            "latency_gain": base.latency_ms / pick.latency_ms if pick.latency_ms > 0 else math.nan}


def _atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
