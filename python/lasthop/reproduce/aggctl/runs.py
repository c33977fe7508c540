"""The aggctl suite's readers of run documents: per-seed and per-point figures that the checks
(`__init__`) and the figures (`figures.py`) are built from."""
from __future__ import annotations

from ..framework import SuiteRun, mean
from .setup import N_MAX, PLACEMENTS, TESTBED_FLOWS, T_CHANGE, WIRED_DELAY_MS, gp_theory, udp_payload


def _docs(run: SuiteRun, sweep: str, key: str | None = None) -> dict:
    """Run documents of a sweep grouped by the value of `key` (all under None without one)."""
    out: dict = {}
    for o, d in run.docs(sweep):
        k = o[key] if key else None
        out.setdefault(k if not isinstance(k, list) else tuple(k), []).append(d)
    return out


def _by_seed(run: SuiteRun, sweep: str, key: str | None = None) -> dict[int, dict]:
    """{seed: {value of `key` (None without one): document}}."""
    out: dict[int, dict] = {}
    for o, s, d in run.seeded(sweep):
        k = o[key] if key else None
        out.setdefault(s, {})[k if not isinstance(k, list) else tuple(k)] = d
    return out


def _mean(xs) -> float:
    return mean(xs, skip_missing=True)


def _mbps(v: str) -> float:
    return float(str(v).replace("Mbps", ""))


def _flows(doc: dict) -> list[dict]:
    return doc["data"]["flows"]


def _hist_quantile(h: list[int], q: float) -> float:
    n = sum(h)
    if not n:
        return 0.0
    acc = 0
    for i, c in enumerate(h):
        acc += c
        if acc >= q * n:
            return float(i)
    return float(len(h) - 1)


def _loss(f: dict) -> float:
    return f["loss"]


def _delay_ms(f: dict, key: str = "mean") -> float:
    return (f["delay_ns"][key] or 0) / 1e6


def _jain(xs: list[float]) -> float:
    s, s2 = sum(xs), sum(x * x for x in xs)
    return s * s / (len(xs) * s2) if s2 else float("nan")


def _vals(d: dict) -> list[float]:
    return [d[k] for k in sorted(d)]


def _curve(docs_by_rate: dict) -> list[tuple[float, float, float, float]]:
    """(rate Mb/s, mean aggregation, mean delay ms, loss) of flow 0 per send rate of one seed."""
    out = []
    for v, d in sorted(docs_by_rate.items(), key=lambda kv: _mbps(kv[0])):
        f = _flows(d)[0]
        out.append((_mbps(v), d["data"]["stations"][0]["mean_ampdu_down"], _delay_ms(f), _loss(f)))
    return out


def _rate_curve(run: SuiteRun, sweep: str) -> list[tuple[float, float, float, float]]:
    """The curve of `_curve`, mean over seeds."""
    curves = [_curve(v) for v in _by_seed(run, sweep, "flows[0].rate").values()]
    return [(pts[0][0],) + tuple(_mean(p[i] for p in pts) for i in (1, 2, 3)) for pts in zip(*curves)]


def _crossing(curve, idx: int, level: float) -> float | None:
    """The send rate where column `idx` of the curve first rises through `level` (linear
    interpolation between sweep points; the first rate if it starts above)."""
    if curve and curve[0][idx] > level:
        return curve[0][0]
    for a, b in zip(curve, curve[1:]):
        if a[idx] <= level < b[idx]:
            return a[0] + (level - a[idx]) * (b[0] - a[0]) / (b[idx] - a[idx])
    return None


def _knees(curve) -> tuple[float | None, float | None]:
    """The rate where mean aggregation first exceeds 56 (interpolated) and the delay/loss knee:
    the first send rate of the sweep at which the mean delay at least doubles from the rate
    before (the "sharp increase") or the loss exceeds 0.1 % (its onset)."""
    r56 = _crossing(curve, 1, 56.0)
    knee = next((b[0] for a, b in zip(curve, curve[1:]) if b[2] >= 2 * a[2] or b[3] > 0.001), None)
    if curve and curve[0][3] > 0.001:
        knee = curve[0][0]
    return r56, knee


def _sat_goodput(run: SuiteRun) -> float:
    return _mean(_flows(d)[0]["goodput_bps"] for d in _docs(run, "saturated")[None])


def _receivers_per_seed(run: SuiteRun) -> dict[int, dict[int, dict]]:
    """{seed: {n: {goodput, frac (UDP payload / GP theory), jfi, delay_ms, hist}}}."""
    out: dict[int, dict[int, dict]] = {}
    for s, v in _by_seed(run, "receivers", "stations[0].count").items():
        for n, x in v.items():
            n = int(n)
            gp = sum(f["goodput_bps"] for f in _flows(x))
            hist = [0] * (N_MAX + 1)
            for st in x["data"]["stations"]:
                for i, c in enumerate(st["ampdu_hist_down"][:N_MAX + 1]):
                    hist[i] += c
            out.setdefault(s, {})[n] = {
                "goodput": gp, "frac": udp_payload(gp) / gp_theory(n),
                "jfi": _jain([f["goodput_bps"] for f in _flows(x)]),
                "delay_ms": _mean(_delay_ms(f) for f in _flows(x)), "hist": hist,
                "loss": _mean(_loss(f) for f in _flows(x))}
    return out


def _receivers(run: SuiteRun) -> dict[int, dict]:
    """Per number of receivers, means over seeds (and the pooled histogram)."""
    per = _receivers_per_seed(run)
    out = {}
    for n in sorted({n for v in per.values() for n in v}):
        rows = [v[n] for v in per.values() if n in v]
        hist = [sum(col) for col in zip(*(r["hist"] for r in rows))]
        out[n] = {"goodput": _mean(r["goodput"] for r in rows), "jfi": _mean(r["jfi"] for r in rows),
                  "delay_ms": _mean(r["delay_ms"] for r in rows), "loss": _mean(r["loss"] for r in rows),
                  "hist": hist, "q25": _hist_quantile(hist, 0.25), "q75": _hist_quantile(hist, 0.75),
                  "theory": gp_theory(n)}
    return out


def _slope(xs: list[float], ys: list[float]) -> float:
    mx, my = _mean(xs), _mean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else float("nan")


def _random_rows(run: SuiteRun) -> list[dict]:
    """One row per run (placement × seed) of the random placements."""
    rows = []
    for k in range(PLACEMENTS):
        if f"random{k}" not in run.results:
            continue
        for _, seed, d in run.seeded(f"random{k}"):
            fl, st = _flows(d), d["data"]["stations"]
            window = (d["spec"]["sim"]["duration_ns"] - d["spec"]["sim"]["warmup_ns"]) / 1e9
            ampdus = _mean(sum(s["ampdu_hist_down"]) for s in st) / window
            pk = [f["delivered_packets"] for f in fl]
            rates = [s["mean_phy_rate_down_bps"] for s in st]
            istar = max(range(len(st)), key=lambda i: rates[i])
            # T_i = μ_N L / μ_R (§III.B): the airtime of receiver i's A-MPDUs; equal airtime is
            # what the circles of Fig. 8 mark and what eq. (2) aims at.
            t_i = [s["airtime_rx_ns"] / max(1, sum(s["ampdu_hist_down"])) for s in st]
            mpdu = [s["mean_ampdu_down"] for s in st]
            fresh = [f["delivered_packets"] / max(1, sum(s["ampdu_hist_down"])) for f, s in zip(fl, st)]
            rows.append({"placement": k, "seed": seed,
                         "goodput": udp_payload(sum(f["goodput_bps"] for f in fl)),
                         "delay_ms": sum(_delay_ms(f) * p for f, p in zip(fl, pk)) / sum(pk) - WIRED_DELAY_MS,
                         "delay_max_station_ms": max(_delay_ms(f) for f in fl) - WIRED_DELAY_MS,
                         "cycle_ms": 1e3 / ampdus if ampdus else float("nan"),
                         "air_dev": max(abs(t / t_i[istar] - 1) for t in t_i),
                         "t_rel": [t / t_i[istar] for t in t_i],
                         "retx": max(1 - fr / m for fr, m in zip(fresh, mpdu) if m),
                         "loss": _mean(_loss(f) for f in fl),
                         "rates": rates, "alloc": [f["aggctl"]["final_rate_bps"] for f in fl]})
    return rows


def _nss_times(doc: dict) -> tuple[float, float, float, float]:
    """Fig. 9's intervals in one run: (Δt1: from the change until the A-MPDUs leave 64 — the
    first 100 ms bin with mean aggregation below 60; Δt2: from there until the send rate stays
    within ±2 % of its final value (mean of the last 2 s); rate before and after, Mb/s)."""
    ts = doc["data"]["timeseries"]
    b = ts["bin_ns"] / 1e9
    agg = ts["station_mean_ampdu_down"][0]
    rate = ts["flow_aggctl_rate_bps"][0]
    i0 = int(round(T_CHANGE / b))
    ib = next((i for i in range(i0, len(agg)) if 0 < agg[i] < 60), len(agg))
    tail = rate[-int(round(2.0 / b)):]
    final = _mean(tail)
    ic = ib
    for i in range(ib, len(rate)):
        if abs(rate[i] / final - 1) > 0.02:
            ic = i + 1
    return (ib - i0) * b, (ic - ib) * b, rate[i0 - 1] / 1e6, final / 1e6


def _cmp_per_seed(run: SuiteRun) -> dict[str, tuple[dict, dict, dict]]:
    """Per algorithm ({seed: goodput Mb/s}, {seed: mean delay ms}, {seed: loss or retransmits}).
    Goodput is the application's payload for all three, as iperf and the paper's sender count it:
    aggctl's UDP payload (`udp_payload`: its goodput counts IP octets), TCP's payload."""
    out = {}
    f0 = lambda d: _flows(d)[0]  # noqa: E731
    out["aggctl"] = (run.per_seed("cmp-aggctl", lambda d: udp_payload(f0(d)["goodput_bps"]) / 1e6),
                     run.per_seed("cmp-aggctl", lambda d: _delay_ms(f0(d))),
                     run.per_seed("cmp-aggctl", lambda d: _loss(f0(d))))
    for cc in TESTBED_FLOWS:
        out[cc] = (run.per_seed(f"cmp-{cc}", lambda d: f0(d)["goodput_bps"] / 1e6),
                   run.per_seed(f"cmp-{cc}", lambda d: _delay_ms(f0(d))),
                   run.per_seed(f"cmp-{cc}", lambda d: f0(d)["tcp"]["retransmits"]))
    return out


def _cmp(run: SuiteRun) -> dict[str, tuple[float, float, float]]:
    """(goodput Mb/s, mean delay ms, loss or retransmits) per algorithm, means over seeds."""
    return {k: tuple(_mean(x.values()) for x in v) for k, v in _cmp_per_seed(run).items()}


def _loop_gain(run: SuiteRun) -> float:
    """g = dμ/dx (packets per Mb/s) around μ = 32 from the single-station fixed-rate sweep."""
    c = _rate_curve(run, "rate-1sta")
    for (r0, a0, _, _), (r1, a1, _, _) in zip(c, c[1:]):
        if a0 <= 32 < a1:
            return (a1 - a0) / (r1 - r0)
    return float("nan")


def _stability(run: SuiteRun) -> dict[tuple[str, float], tuple[float, float]]:
    """(std-dev of the reported aggregation, coefficient of variation of the rate) over the
    measurement window, per (Δ, K) — K the paper's gain (one station: K = k0)."""
    acc: dict = {}
    for o, d in run.docs("stability"):
        ts = d["data"]["timeseries"]
        w = int(d["spec"]["sim"]["warmup_ns"] // ts["bin_ns"])
        est = ts["flow_aggctl_est_ampdu"][0][w:-1]
        rate = ts["flow_aggctl_rate_bps"][0][w:-1]
        me, mr = _mean(est), _mean(rate)
        sd = (sum((x - me) ** 2 for x in est) / len(est)) ** 0.5
        cv = (sum((x - mr) ** 2 for x in rate) / len(rate)) ** 0.5 / mr
        acc.setdefault((str(o["aggctl.interval"]), float(o["aggctl.k0"])), []).append((sd, cv))
    return {k: (_mean(a for a, _ in v), _mean(b for _, b in v)) for k, v in acc.items()}


def _cell_figures(docs: list[dict]) -> tuple[float, float, list[float], float]:
    """Of `_modern_cell`'s runs: the aggctl flows' goodput in sum (Mb/s), their mean p95 delay
    (ms), each one's true mean aggregation, and the CUBIC download's goodput (Mb/s)."""
    gp = _mean(sum(f["goodput_bps"] for f in _flows(d)[:3]) for d in docs) / 1e6
    dl = _mean(_mean(_delay_ms(f, "p95") for f in _flows(d)[:3]) for d in docs)
    agg = [_mean(f["aggctl"]["true_mean_ampdu"] for f in (_flows(d)[i] for d in docs)) for i in range(3)]
    return gp, dl, agg, _mean(_flows(d)[3]["goodput_bps"] for d in docs) / 1e6
