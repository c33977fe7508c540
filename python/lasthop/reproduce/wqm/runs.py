"""The wqm suite's readers of run documents, for the checks (`__init__`) and the figures.

The five schemes of a case run with the same seeds (one sweep over ap.qdisc and its "-pie",
"-wqm" and "-fq" twins), so every ratio is taken seed by seed (`ratio`, `paired`) and then
checked: a claim holds when the 95 % CI over seeds of each tested quantity lies in its band."""
from __future__ import annotations

from ..framework import Check, SuiteRun, paired
from ..framework import mean as _mean
from .setup import LABEL, SCHEMES


def _docs(run: SuiteRun, name: str, **match) -> dict[str, list[dict]]:
    """Result documents of sweep pair `name` per scheme, over seeds, where the other varied
    keys equal `match` (compared as text)."""
    def ok(o):
        return all(str(o.get(k)) == str(v) for k, v in match.items())
    out: dict[str, list[dict]] = {}
    fq = run.docs(f"{name}-fq") if f"{name}-fq" in run.results else ()
    for o, d in [*run.docs(name), *fq]:
        if ok(o):
            out.setdefault(_scheme(o), []).append(d)
    for twin in ("pie", "wqm"):
        for o, d in run.docs(f"{name}-{twin}"):
            if ok(o):
                out.setdefault(twin, []).append(d)
    return out


def _scheme(overrides: dict) -> str:
    """The scheme of a run of a case's sweep over ap.qdisc (its "pie" is PIE with timestamps)."""
    q = str(overrides["ap.qdisc"])
    return "pie_ts" if q == "pie" else q


def _n_tcp(doc: dict) -> int:
    return sum(1 for f in doc["data"]["flows"] if f["pattern"] == "tcp")


def _pings(doc: dict) -> list[dict]:
    return [f for f in doc["data"]["flows"] if f["pattern"] == "ping"]


def _rtt_ms(docs: list[dict], q: str = "p50", ping: int = 0) -> float:
    """Mean over seeds of a ping's RTT quantile `q` (ms)."""
    return _mean(_pings(d)[ping]["delay_ns"][q] / 1e6 for d in docs)


def _cdf_ms(docs: list[dict], ping: int = 0) -> list[float]:
    """The ping's RTT at each reported quantile, averaged over seeds (ms)."""
    rows = [_pings(d)[ping]["delay_ns"]["cdf_ns"] for d in docs]
    return [sum(c[i] for c in rows) / len(rows) / 1e6 for i in range(len(rows[0]))]


CDF_Q = [0.01, 0.05] + [i / 20 for i in range(2, 20)] + [0.99]


def _goodput(docs: list[dict], flows: list[int] | None = None) -> float:
    """Mean over seeds of the summed goodput of the TCP flows (or of `flows`), Mb/s."""
    def one(d):
        fl = d["data"]["flows"]
        idx = flows if flows is not None else range(_n_tcp(d))
        return sum(fl[i]["goodput_bps"] for i in idx) / 1e6
    return _mean(one(d) for d in docs)


def _seeded(run: SuiteRun, name: str, fn, **match) -> dict[str, dict[int, float]]:
    """`fn(doc)` per scheme, per seed, over the sweep pair `name` where the other varied keys
    equal `match` (compared as text)."""
    def ok(o):
        return all(str(o.get(k)) == str(v) for k, v in match.items())
    out: dict[str, dict[int, float]] = {}
    fq = run.seeded(f"{name}-fq", ok) if f"{name}-fq" in run.results else ()
    for o, seed, d in [*run.seeded(name, ok), *fq]:
        out.setdefault(_scheme(o), {})[seed] = float(fn(d))
    for twin in ("pie", "wqm"):
        for o, seed, d in run.seeded(f"{name}-{twin}", ok):
            out.setdefault(twin, {})[seed] = float(fn(d))
    return out


def _ping_q(q: str = "p50", ping: int = 0):
    return lambda d: _pings(d)[ping]["delay_ns"][q] / 1e6


def _gp_one(d: dict) -> float:
    return sum(f["goodput_bps"] for f in d["data"]["flows"][:_n_tcp(d)]) / 1e6


def _jfi_one(d: dict) -> float:
    g = [f["goodput_bps"] for f in d["data"]["flows"][:_n_tcp(d)]]
    return sum(g) ** 2 / (len(g) * sum(x * x for x in g)) if any(g) else 0.0


def _cost(g: dict[str, dict[int, float]], ref: str = "fifo") -> list[float]:
    """Per seed: 1 − WQM's goodput / `ref`'s (the goodput WQM gives up)."""
    return paired(g["wqm"], g[ref], lambda w, f: 1 - w / f)


def _m(x: dict[int, float]) -> float:
    return _mean(x.values())


def _fmt(v: dict[str, float], unit: str = "ms") -> str:
    return ", ".join(f"{LABEL[s]} {v[s]:.1f}" for s in SCHEMES if s in v) + f" {unit}"


def _out(checks: list[Check]) -> list[str]:
    return [c.label for c in checks if c.status() == "out"]


def _secs(run: SuiteRun) -> int:
    """The duration of the no-aggregation runs (s)."""
    _, d = next(run.docs("hops1-noagg"))
    return round(d["spec"]["sim"]["duration_ns"] / 1e9)


def _setting_text(setting: str) -> str:
    return "Minstrel" if setting == "minstrel" else f"{setting} Mb/s"


def _ap_backlog(doc: dict) -> float:
    """The mean backlog of the AP's (the gateway's) interface queue after warm-up, packets."""
    ts = doc["data"]["timeseries"]
    skip = doc["spec"]["sim"]["warmup_ns"] // ts["bin_ns"]
    vals = [v for v in ts["node_backlog_packets"][0][skip:] if v is not None]
    return _mean(vals)


def _span(xs: list[float]) -> str:
    lo, hi = f"{min(xs):.1f}", f"{max(xs):.1f}"
    return lo if lo == hi else f"{lo}–{hi}"


def _tcp_rtt(doc: dict, q: float | None = None) -> float:
    """The TCP flow's RTT samples (what the paper's Fig. 1 plots) after warm-up, per 100 ms
    bin: their mean, or the quantile `q` of the bins (ms)."""
    ts = doc["data"]["timeseries"]
    skip = doc["spec"]["sim"]["warmup_ns"] // ts["bin_ns"]
    vals = sorted(v for v in ts["flow_rtt_ns"][0][skip:] if v > 0)
    if not vals:
        return float("nan")
    if q is None:
        return sum(vals) / len(vals) / 1e6
    return vals[min(len(vals) - 1, int(q * len(vals)))] / 1e6

