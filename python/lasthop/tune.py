"""`lasthop tune`: search the levers a Linux AP really has for the configuration that cuts the
latency of a loaded cell without giving up its goodput or starving a station.

The cell (stations, rates, traffic) is the user's spec; its `[ap]` and `[mac]` as written are the
baseline (mac80211's defaults when left out). The levers, each as 802.11 and Linux define it:

- the EDCA Parameter Set the AP advertises to its stations (`mac.cw_min`, `mac.aifsn`,
  `mac.txop_limit`: hostapd `wmm_ac_be_cwmin`/`_aifs`/`_txop_limit`, IEEE 802.11-2020
  §9.4.2.28, AIFSN ≥ 2 for stations, TXOP limit in 32 µs units);
- the AP's own EDCA (`ap.cw_min`, `ap.aifsn`: hostapd `tx_queue_data2_cwmin`/`_aifs`, AIFSN ≥ 1);
- AQL's per-station limits (`ap.aql_limit_low`/`_high`, mac80211's `aql_txq_limit`), with a
  driver that queues below mac80211;
- the airtime scheduler (`ap.scheduler`: mac80211's airtime DRR or round robin);
- TCP ACK filtering of the uploads' ACKs in the AP's flow queue (`ap.ack_filter`, sch_cake's
  `ack-filter`, RFC 3449 §5.2.1), with mac80211's FQ-CoDel.

The search evaluates the baseline and up to `budget` candidates drawn without repetition from
the product of the levers' values (a seeded, deterministic order), each over `seeds` seeds, as
one sweep per candidate sharing a content-addressed run cache: an interrupted search resumes
where it stopped. Each candidate is scored by three figures, means over its seeds:

- latency: the largest p99 round-trip time of the cell's ping flows (one-way p99 of its flows
  when it has no ping);
- goodput: the total goodput of its other flows;
- worst share: the smallest download goodput of a station over an equal share of the downloads'
  total.

The Pareto set over (lower latency, higher goodput, higher worst share) is reported; the chosen
configuration is the Pareto member with the lowest latency among those keeping ≥ 95 % of the
baseline's goodput and every station's download ≥ 25 % of an equal share (`GOODPUT_KEEP`,
`SHARE_FLOOR`), then refined by dropping levers that do not help (`refine`), or, when no member
keeps those, the one with the best latency per goodput, reported as such. The ablation reruns
the choice without each of its levers: what each lever buys.
"""
from __future__ import annotations

import copy
import hashlib
import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .spec import tomllib

GOODPUT_KEEP = 0.95
SHARE_FLOOR = 0.25


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
    Lever("ap.cw_min", (15, 7, 3), "hostapd.conf tx_queue_data2_cwmin"),
    Lever("ap.aifsn", (3, 2, 1), "hostapd.conf tx_queue_data2_aifs"),
    Lever("ap.aql", ("5ms/12ms", "2ms/4ms", "1ms/2ms"), "debugfs: /sys/kernel/debug/ieee80211/phy0/aql_txq_limit"),
    Lever("ap.scheduler", ("airtime", "round_robin"), "mac80211 airtime fairness: debugfs airtime_flags"),
    Lever("ap.ack_filter", ("off", "conservative", "aggressive"), "tc: sch_cake's ack-filter / ack-filter-aggressive"),
)


class TuneError(Exception):
    """A user error (one line)."""


@dataclass
class Candidate:
    """One configuration: the lever values that differ from the baseline's (empty: baseline)."""

    values: dict[str, Any]
    latency_ms: float = math.nan
    goodput_bps: float = math.nan
    worst_share: float = math.nan
    seeds: list[dict[str, float]] = field(default_factory=list)

    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.values.items()) or "baseline"


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


def applicable(doc: dict[str, Any]) -> list[Lever]:
    """The levers this cell has: those whose values its spec accepts (the spec rules decide,
    e.g. AQL only with a driver that queues below mac80211)."""
    from .spec import SpecError, check_native, normalize

    out = []
    for lv in LEVERS:
        try:
            for v in lv.values[1:]:
                check_native(normalize(apply(doc, {lv.key: v})))
        except SpecError:
            continue
        out.append(lv)
    return out


def apply(doc: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """The cell's spec with the lever `values` set."""
    out = copy.deepcopy(doc)
    for key, v in values.items():
        if key == "ap.aql":
            lo, hi = v.split("/")
            out.setdefault("ap", {}).update({"aql_limit_low": lo, "aql_limit_high": hi})
            continue
        sec, k = key.split(".")
        out.setdefault(sec, {})[k] = v
    return out


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


def score(doc: dict[str, Any]) -> dict[str, float]:
    """The three figures of one run's result document."""
    flows = doc["data"]["flows"]
    pings = [f for f in flows if f.get("pattern") == "ping"]
    lat = max((f["delay_ns"]["p99"] for f in (pings or flows) if f["delay_ns"].get("samples")), default=math.nan)
    good = sum(f["goodput_bps"] for f in flows if f.get("pattern") != "ping")
    down: dict[int, float] = {}
    for f in flows:
        if f.get("direction") == "down" and f.get("pattern") != "ping":
            down[f["station"]] = down.get(f["station"], 0.0) + f["goodput_bps"]
    total = sum(down.values())
    worst = min(down.values()) / (total / len(down)) if down and total > 0 else math.nan
    return {"latency_ms": lat / 1e6, "goodput_bps": good, "worst_share": worst}


def evaluate(cell: dict[str, Any], cand: Candidate, seeds: int, out: Path, jobs: int | None,
             ray: str | None) -> None:
    from .sweeps import Sweep, run_sweep

    spec = apply(cell, cand.values)
    tag = hashlib.sha256(json.dumps(cand.values, sort_keys=True).encode()).hexdigest()[:12]
    res = run_sweep(Sweep(base=spec, seeds=seeds), out / "candidates" / tag, jobs=jobs, ray=ray,
                    progress=False, cache=out / "runs")
    cand.seeds = [score(res.load(r["point"], r["seed"])) for r in res.runs]
    for k in ("latency_ms", "goodput_bps", "worst_share"):
        vals = [s[k] for s in cand.seeds if math.isfinite(s[k])]
        setattr(cand, k, sum(vals) / len(vals) if vals else math.nan)


def dominates(a: Candidate, b: Candidate) -> bool:
    ge = a.latency_ms <= b.latency_ms and a.goodput_bps >= b.goodput_bps and a.worst_share >= b.worst_share
    gt = a.latency_ms < b.latency_ms or a.goodput_bps > b.goodput_bps or a.worst_share > b.worst_share
    return ge and gt


def pareto(cands: list[Candidate]) -> list[Candidate]:
    return sorted((c for c in cands if not any(dominates(o, c) for o in cands)), key=lambda c: c.latency_ms)


def choose(base: Candidate, front: list[Candidate]) -> tuple[Candidate, bool]:
    """The lowest-latency Pareto member that keeps the goodput and the shares; else the best
    latency per goodput lost (False: no member met the constraints)."""
    ok = [c for c in front if meets(c, base)]
    if ok:
        return min(ok, key=lambda c: c.latency_ms), True
    return min(front, key=lambda c: c.latency_ms / max(c.goodput_bps, 1.0)), False


def hostapd_fragment(values: dict[str, Any]) -> list[str]:
    """What an operator writes into hostapd.conf for the chosen EDCA values (BE)."""
    lines = []
    if "mac.cw_min" in values:
        lines.append(f"wmm_ac_be_cwmin={int(math.log2(values['mac.cw_min'] + 1))}")
    if "mac.aifsn" in values:
        lines.append(f"wmm_ac_be_aifs={values['mac.aifsn']}")
    if "mac.txop_limit" in values:
        from .units import parse_duration

        lines.append(f"wmm_ac_be_txop_limit={parse_duration(values['mac.txop_limit']) // 32_000}")
    if "ap.cw_min" in values:
        lines.append(f"tx_queue_data2_cwmin={values['ap.cw_min']}")
    if "ap.aifsn" in values:
        lines.append(f"tx_queue_data2_aifs={values['ap.aifsn']}")
    return lines


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

    lines: list[str] = []
    for k, v in doc.items():
        if not isinstance(v, (dict, list)) or (isinstance(v, list) and not any(isinstance(x, dict) for x in v)):
            lines.append(f"{k} = {val(v)}")
    for k, v in doc.items():
        if isinstance(v, dict):
            lines += ["", f"[{k}]"] + [f"{kk} = {val(vv)}" for kk, vv in v.items()]
        elif isinstance(v, list) and any(isinstance(x, dict) for x in v):
            for item in v:
                lines += ["", f"[[{k}]]"] + [f"{kk} = {val(vv)}" for kk, vv in item.items()]
    return "\n".join(lines) + "\n"


def tune(path: str | Path, out: Path, budget: int, seeds: int, jobs: int | None = None,
         ray: str | None = None, progress: Callable[[int, int, Candidate], None] | None = None,
         exclude: tuple[str, ...] = ()) -> dict[str, Any]:
    """Run the search; write `out`/tune.json, chosen.toml, chosen.txt; return the report.
    `exclude`: lever keys left out of the search."""
    if budget < 1:
        raise TuneError(f"--budget {budget}: at least 1 candidate")
    cell = load_cell(path)
    levers = [lv for lv in applicable(cell) if lv.key not in exclude]
    base = Candidate({})
    cands = [base] + [Candidate(v) for v in candidates(levers, budget, seed=(cell.get("sim") or {}).get("seed", 1))]
    out.mkdir(parents=True, exist_ok=True)
    for i, c in enumerate(cands):
        evaluate(cell, c, seeds, out, jobs, ray)
        if progress:
            progress(i + 1, len(cands), c)
    front = pareto(cands)
    chosen, met = choose(base, front)
    if met:
        chosen = refine(cell, chosen, base, cands, seeds, out, jobs, ray)
        front = pareto(cands)
    report = {
        "spec": str(path), "seeds": seeds, "budget": budget, "levers": [lv.key for lv in levers],
        "goodput_keep": GOODPUT_KEEP, "share_floor": SHARE_FLOOR,
        "candidates": [{"values": c.values, "latency_ms": c.latency_ms, "goodput_bps": c.goodput_bps,
                        "worst_share": c.worst_share, "pareto": c in front} for c in cands],
        "baseline": {"latency_ms": base.latency_ms, "goodput_bps": base.goodput_bps, "worst_share": base.worst_share},
        "chosen": {"values": chosen.values, "latency_ms": chosen.latency_ms, "goodput_bps": chosen.goodput_bps,
                   "worst_share": chosen.worst_share, "meets_constraints": met,
                   "latency_gain": base.latency_ms / chosen.latency_ms if chosen.latency_ms > 0 else math.nan},
        "ablation": ablation(cell, chosen, base, seeds, out, jobs, ray),
    }
    spec = apply(cell, chosen.values)
    spec["name"] = f"{cell.get('name', 'cell')}-tuned"
    _atomic(out / "chosen.toml", "# lasthop tune's chosen configuration for " + str(path) + "\n" + write_toml(spec))
    text = ["# hostapd.conf (the BE queue)"] + (hostapd_fragment(chosen.values) or ["# (no change)"])
    text += ["", "# on the AP host"] + (host_commands(chosen.values) or ["# (no change)"])
    _atomic(out / "chosen.txt", "\n".join(text) + "\n")
    _atomic(out / "tune.json", json.dumps(report, indent=1, sort_keys=True) + "\n")
    return report


def meets(c: Candidate, base: Candidate) -> bool:
    return c.goodput_bps >= GOODPUT_KEEP * base.goodput_bps and (not math.isfinite(c.worst_share) or c.worst_share >= SHARE_FLOOR)


def refine(cell: dict[str, Any], chosen: Candidate, base: Candidate, cands: list[Candidate], seeds: int,
           out: Path, jobs: int | None, ray: str | None) -> Candidate:
    """A random draw sets levers that do not help: drop, one at a time, every lever whose
    removal keeps the constraints and lowers the latency, until none does (each configuration
    tried joins `cands`)."""
    known = {json.dumps(c.values, sort_keys=True): c for c in cands}
    improved = True
    while improved and chosen.values:
        improved = False
        for key in list(chosen.values):
            vals = {k: v for k, v in chosen.values.items() if k != key}
            c = known.get(json.dumps(vals, sort_keys=True))
            if c is None:
                c = Candidate(vals)
                evaluate(cell, c, seeds, out, jobs, ray)
                cands.append(c)
                known[json.dumps(vals, sort_keys=True)] = c
            if meets(c, base) and c.latency_ms < chosen.latency_ms:
                chosen, improved = c, True
                break
    return chosen


def ablation(cell: dict[str, Any], chosen: Candidate, base: Candidate, seeds: int, out: Path,
             jobs: int | None, ray: str | None) -> list[dict[str, Any]]:
    """Which lever buys what: the chosen configuration without each of its levers in turn."""
    rows = []
    for key in chosen.values:
        c = Candidate({k: v for k, v in chosen.values.items() if k != key})
        if not c.values:
            c = base
        elif not c.seeds:
            evaluate(cell, c, seeds, out, jobs, ray)
        rows.append({"without": key, "latency_ms": c.latency_ms, "goodput_bps": c.goodput_bps,
                     "worst_share": c.worst_share})
    return rows


def _atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
