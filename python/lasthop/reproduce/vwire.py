"""vwire: "Virtual Wires: Rethinking WiFi networks" (Yang, Jiang, Misra, Rubenstein).

The split proxy at the AP (`world_vwire.rs`): each TCP download ends at the AP and a second
connection carries it to the station; with `[vwire]` a classifier → utility optimizer → token
scheduler allocates WiFi airtime every 2 s. The Virtual Wires method is covered by Columbia
University patents (US 10,687,341 B2 and US 11,297,634).

Setup (the paper's §IV where it is specific, documented choices where not): 802.11n at 2.4 GHz,
20 MHz, short GI, two spatial streams, Minstrel-HT (a home router; the paper's Linksys WRT1200AC
on 2.4 GHz); receivers at 3 ft (0.9 m) and 75 ft (22.9 m). The paper's room had ~50 visible
APs; we model its weak far link with a log-distance exponent of 4.5, which puts 75 ft at
MCS 2–4 of two streams (≈ 40–60 Mb/s PHY; a lone TCP download gets ≈ 33 Mb/s there) and 3 ft at
the top rate (144 Mb/s). Server behind the AP on 1 Gb/s with 10 ms one-way delay (the paper's
"10 ms to the Google CDN").

* V1: a 4K video at 30 Mb/s — modelled as a TCP download whose server application writes
  30 Mb/s (every 10 ms; no player buffer, so a backlog from a dip is caught up) — to a receiver
  walking 3 ft → 75 ft → 3 ft (30 s per leg, the paper's t = 0, 30, 60), beside a greedy CUBIC
  download to a receiver at 3 ft. Utilities as the paper: step 10 at 32 Mb/s, 0.1·log b. The
  server runs CUBIC in every mode (its congestion control is the server's; V3 is where the split
  changes it). Metric: share of 1 s bins after warm-up with ≥ 30 Mb/s, within 2 % (the source
  is paced at exactly 30 Mb/s, so a bin edge moves up to one 10 ms write between bins).
* V2: a 1 Mb/s flow (paced TCP, step utility 10 at 1.2 Mb/s — "slightly more than its send
  rate") beside N = 0…3 greedy downloads, all to one receiver at 3 ft or 75 ft. The paper
  measures the router → device TCP RTT; we report the router → device one-way delay of the
  1 Mb/s flow's data packets (split: from the proxy's send; end to end: minus the wired delay).
* V3: one download, wire delay 10 ms, random loss 0–4 % on the data direction of the wire only;
  split BBR (server) + CUBIC (AP → station) vs end-to-end CUBIC and BBR, at 3 ft and 75 ft.
* V4: end-to-end BBR vs B·r/R, the `tcp-baselines` suite's claim V4, re-run here from its sweeps.

Beyond the paper: the same V1/V2 scenarios behind a modern AP (FQ-CoDel per station, airtime
fairness, firmware queue with AQL) without the proxy; the classifier's held-out accuracy and
confusion matrix from the trainer's fixture.
"""
from __future__ import annotations

import copy
from pathlib import Path

from . import tcp_baselines
from .framework import Claim, ClaimResult, Figure, SuiteRun, SweepDef
from .framework import mean as _mean

NAME = "vwire"
TITLE = "Virtual Wires: split proxy and utility-based airtime at the AP"
SOURCE = ("Yang, Jiang, Misra, Rubenstein, \"Virtual Wires: Rethinking WiFi networks\"; TARGETS V1–V4 "
          "(method patented: US 10,687,341 B2, US 11,297,634)")
DESCRIPTION = ("802.11n 2.4 GHz 20 MHz SGI, 2 streams, Minstrel-HT; receivers at 3 ft (0.9 m) and 75 ft (22.9 m), "
               "path-loss exponent 4.5 (weak far link); server on 1 Gb/s, 10 ms one way. V1 4K video (paced 30 Mb/s "
               "TCP) to a walking receiver vs a greedy download; V2 a 1 Mb/s flow beside 0–3 greedy flows; V3 split "
               "BBR+CUBIC vs end-to-end CUBIC and BBR under wire loss; V4 from tcp-baselines. Modes: end to end "
               "(FIFO AP), vwire (split + classifier/optimizer/token scheduler), modern AP (FQ-CoDel + airtime + AQL).")

NEAR, FAR = 0.9, 22.9
DIST_LABEL = {NEAR: "3 ft", FAR: "75 ft"}
MODES = ["e2e", "vwire", "modern"]
MODE_LABEL = {"e2e": "end to end, FIFO AP", "vwire": "Virtual Wires", "modern": "FQ-CoDel + airtime + AQL"}
COLOR = {"e2e": "#D55E00", "vwire": "#0072B2", "modern": "#009E73",
         "e2e-cubic": "#D55E00", "e2e-bbr": "#E69F00", "split": "#0072B2"}
VIDEO_BPS = 30e6
BIN_TOL = 0.02
N_GREEDY = [0, 1, 2, 3]
LOSSES = [0.0, 0.01, 0.02, 0.04]
V3_MODES = ["e2e-cubic", "e2e-bbr", "split"]
V3_LABEL = {"e2e-cubic": "CUBIC end to end", "e2e-bbr": "BBR end to end", "split": "BBR + CUBIC (split)"}
WIRED_DELAY_MS = 10.0


def _cell(name: str, duration: str, warmup: str) -> dict:
    return {
        "name": name,
        "sim": {"duration": duration, "warmup": warmup, "seed": 1, "bin": "1s"},
        "phy": {"standard": "ht", "band": "2.4GHz", "channel_width": 20, "guard_interval": 400},
        "channel": {"exponent": 4.5},
        "wired": {"rate": "1Gbps", "delay": "10ms"},
        "stations": [],
        "flows": [],
    }


def _sta(**kw) -> dict:
    return {"count": 1, "nss": 2, "rate_control": "minstrel", "error_model": "snr", **kw}


def _apply_mode(doc: dict, mode: str, classes: list[tuple[str, str]]) -> dict:
    """`classes`: (app_class, utility) per flow, used with vwire."""
    doc = copy.deepcopy(doc)
    if mode == "vwire":
        doc["vwire"] = {"enabled": True}
        for f, (cls, util) in zip(doc["flows"], classes):
            f.update({"split": True, "split_wired_cc": f.get("cc", "cubic"), "app_class": cls, "utility": util})
    elif mode == "modern":
        doc["ap"] = {"qdisc": "fq_codel", "scheduler": "airtime", "driver": "firmware", "aql": True}
    doc["name"] = f"{doc['name']}-{mode}"
    return doc


def _v1(mode: str) -> dict:
    s = _cell("vwire-v1", "64s", "4s")
    s["stations"] = [_sta(walk_m=[NEAR, FAR], speed_mps=round((FAR - NEAR) / 30, 6)), _sta(distance_m=NEAR)]
    s["flows"] = [{"stations": 0, "pattern": "tcp", "cc": "cubic", "app_rate": "30Mbps"},
                  {"stations": 1, "pattern": "tcp", "cc": "cubic"}]
    return _apply_mode(s, mode, [("video_4k", "step:32Mbps:10"), ("bulk", "log:0.1")])


def _v2(mode: str, n: int) -> dict:
    s = _cell(f"vwire-v2-n{n}", "20s", "4s")
    s["stations"] = [_sta(distance_m=NEAR)]
    s["flows"] = [{"stations": 0, "pattern": "tcp", "cc": "cubic", "app_rate": "1Mbps"}]
    s["flows"] += [{"stations": 0, "pattern": "tcp", "cc": "cubic"} for _ in range(n)]
    return _apply_mode(s, mode, [("voip", "step:1.2Mbps:10")] + [("bulk", "log:1")] * n)


def _v3(mode: str) -> dict:
    s = _cell("vwire-v3", "20s", "4s")
    s["wired"]["loss_up"] = 0.0
    s["stations"] = [_sta(distance_m=NEAR)]
    f = {"stations": 0, "pattern": "tcp", "cc": "cubic"}
    if mode == "e2e-bbr":
        f["cc"] = "bbr"
    elif mode == "split":
        f.update({"split": True, "split_wired_cc": "bbr"})
    s["flows"] = [f]
    s["name"] = f"vwire-v3-{mode}"
    return s


def sweeps(quick: bool) -> list[SweepDef]:
    dist = ("stations[0].distance_m", [NEAR, FAR])
    out = []
    for m in MODES:
        out.append(SweepDef(f"v1-{m}", _v1(m), [], seeds=3, quick_seeds=1))
        for n in N_GREEDY:
            out.append(SweepDef(f"v2-{m}-n{n}", _v2(m, n), [dist], seeds=3, quick_seeds=1,
                                quick={"sim": {"duration": "12s"}}))
    for m in V3_MODES:
        out.append(SweepDef(f"v3-{m}", _v3(m), [dist, ("wired.loss", LOSSES)], seeds=3, quick_seeds=1,
                            quick={"sim": {"duration": "12s"}}))
    # V4: the tcp-baselines sweeps behind its claim V4.
    out += [sd for sd in tcp_baselines.sweeps(quick) if sd.name in ("bbr", "bbr-udp")]
    return out


# ------------------------------------------------------------------ data


def _docs(run: SuiteRun, sweep: str) -> list[tuple[dict, dict]]:
    return list(run.docs(sweep))



def _bins(doc: dict, flow: int = 0) -> list[float]:
    ts = doc["data"]["timeseries"]
    skip = doc["spec"]["sim"]["warmup_ns"] // ts["bin_ns"]
    return ts["flow_goodput_bps"][flow][skip:]


def _v1_share(run: SuiteRun, mode: str) -> float:
    shares = []
    for _, d in _docs(run, f"v1-{mode}"):
        b = _bins(d)
        shares.append(sum(1 for x in b if x >= VIDEO_BPS * (1 - BIN_TOL)) / len(b))
    return _mean(shares)


def _delay_ms(doc: dict) -> float:
    """Router → device one-way delay of flow 0's data, ms."""
    f = doc["data"]["flows"][0]
    m = f["delay_ns"]["mean"] / 1e6
    return m if f.get("split") else m - WIRED_DELAY_MS


def _v2_delays(run: SuiteRun, mode: str) -> dict[tuple[float, int], float]:
    out = {}
    for n in N_GREEDY:
        acc: dict[float, list[float]] = {}
        for o, d in _docs(run, f"v2-{mode}-n{n}"):
            acc.setdefault(float(o["stations[0].distance_m"]), []).append(_delay_ms(d))
        for dist, v in acc.items():
            out[(dist, n)] = _mean(v)
    return out


def _v3_goodput(run: SuiteRun) -> dict[tuple[str, float, float], float]:
    out: dict[tuple[str, float, float], list[float]] = {}
    for m in V3_MODES:
        for o, d in _docs(run, f"v3-{m}"):
            k = (m, float(o["stations[0].distance_m"]), float(o["wired.loss"]))
            out.setdefault(k, []).append(d["data"]["flows"][0]["goodput_bps"])
    return {k: _mean(v) for k, v in out.items()}


# ------------------------------------------------------------------ claims


def _check_v1(run: SuiteRun) -> ClaimResult:
    s = {m: _v1_share(run, m) for m in MODES}
    ok = s["vwire"] >= 0.95 and s["e2e"] < 0.80
    why = ""
    if not ok:
        parts = []
        if s["vwire"] < 0.95:
            parts.append("with vwire the video still dips for a few seconds when the receiver's rate falls: the "
                         "allocation follows L_i only every 2 s, and the greedy flow keeps airtime through work "
                         "conservation until the video's socket backs up")
        if s["e2e"] >= 0.80:
            parts.append("without vwire the MAC's per-station round robin already gives the far receiver enough airtime")
        why = "; ".join(parts)
    return ClaimResult(f"bins ≥ 30 Mb/s: vwire {s['vwire'] * 100:.0f}%, end to end {s['e2e'] * 100:.0f}% "
                       f"(modern AP {s['modern'] * 100:.0f}%)", ok, why, s)


def _check_v2(run: SuiteRun) -> ClaimResult:
    e2e, vw = _v2_delays(run, "e2e"), _v2_delays(run, "vwire")
    red = {k: 1 - vw[k] / e2e[k] for k in e2e if k in vw}
    one = [red[(d, 1)] for d in (NEAR, FAR)]
    grows_n = all(red[(d, n + 1)] >= red[(d, n)] - 0.05 for d in (NEAR, FAR) for n in N_GREEDY[1:-1])
    grows_d = all(red[(FAR, n)] >= red[(NEAR, n)] - 0.05 for n in N_GREEDY[1:])
    ok = min(one) >= 0.5 and grows_n and grows_d
    txt = "; ".join(f"{DIST_LABEL[d]}: " + ", ".join(f"N={n} {vw[(d, n)]:.1f} vs {e2e[(d, n)]:.1f} ms ({-red[(d, n)] * 100:+.0f}%)"
                                                      for n in N_GREEDY) for d in (NEAR, FAR))
    why = []
    if min(one) < 0.5:
        why.append("with one greedy flow the reduction is below 50%")
    if not grows_n:
        why.append("the reduction does not grow with N: with the proxy each greedy flow may keep its TCP small-queues "
                   "budget (max(2 segments, pacing rate >> 7), as Linux sizes it under mac80211) in the station's FIFO, so the 1 Mb/s flow's delay grows with N, "
                   "while end to end the 1000-packet FIFO is already full with one greedy flow")
    if not grows_d:
        why.append("the reduction is not larger at 75 ft: the same TSQ budgets take longer to drain at the far "
                   "receiver's lower rate, so the proxy's delay grows with distance as much as the FIFO's")
    return ClaimResult(txt, ok, "; ".join(why), {"reduction": {f"{d}/{n}": r for (d, n), r in red.items()}})


def _check_v3(run: SuiteRun) -> ClaimResult:
    g = _v3_goodput(run)
    tol = 0.02
    worse = [(d, x) for d in (NEAR, FAR) for x in LOSSES
             if g[("split", d, x)] < (1 - tol) * max(g[("e2e-cubic", d, x)], g[("e2e-bbr", d, x)])]
    gain = g[("split", FAR, 0.0)] / g[("e2e-cubic", FAR, 0.0)] - 1
    ok = not worse and gain >= 0.15
    txt = "; ".join(f"{DIST_LABEL[d]}: " + ", ".join(
        f"{x * 100:g}% {g[('split', d, x)] / 1e6:.0f}/{g[('e2e-cubic', d, x)] / 1e6:.0f}/{g[('e2e-bbr', d, x)] / 1e6:.0f}"
        for x in LOSSES) for d in (NEAR, FAR))
    why = []
    if worse:
        why.append("split below the better end-to-end variant at " + ", ".join(f"{DIST_LABEL[d]} {x * 100:g}%" for d, x in worse)
                   + " (by a few per cent)")
    if gain < 0.15:
        why.append(f"at 75 ft without loss split gains only {gain * 100:+.0f}% over CUBIC: in the model WiFi losses are "
                   "repaired by the MAC's retries, so end-to-end CUBIC is not pushed back by them as in the paper (and "
                   "it gained ~5 Mb/s here when the server's TCP small queues took Linux's rate-based limit)")
    return ClaimResult(f"split/CUBIC/BBR Mb/s by wire loss — {txt}; 75 ft no loss: split {gain * 100:+.0f}% vs CUBIC",
                       ok, "; ".join(why), {"gain_far_noloss": gain, **{f"{k[0]}/{k[1]}/{k[2]}": v for k, v in g.items()}})


def _check_v4(run: SuiteRun) -> ClaimResult:
    r = tcp_baselines._check_bbr_v4(run)
    r.value = r.value + " (tcp-baselines V4)"
    return r


def _check_modern(run: SuiteRun) -> ClaimResult:
    s = {m: _v1_share(run, m) for m in MODES}
    vw, mo = _v2_delays(run, "vwire"), _v2_delays(run, "modern")
    d_vw = _mean(vw[(d, n)] for d in (NEAR, FAR) for n in N_GREEDY[1:])
    d_mo = _mean(mo[(d, n)] for d in (NEAR, FAR) for n in N_GREEDY[1:])
    ok = s["vwire"] >= s["modern"]
    why = "" if ok else ("the modern AP's airtime fairness serves the far receiver as well as vwire's allocation")
    return ClaimResult(f"V1 bins ≥ 30 Mb/s: vwire {s['vwire'] * 100:.0f}% vs modern AP {s['modern'] * 100:.0f}%; "
                       f"V2 1 Mb/s delay (N ≥ 1, mean): vwire {d_vw:.1f} ms vs modern AP {d_mo:.1f} ms", ok, why,
                       {"v1_share": s, "v2_delay_vwire_ms": d_vw, "v2_delay_modern_ms": d_mo})


FIXTURE = Path(__file__).resolve().parents[3] / "crates/lasthop-algo/src/control/vwire/model/fixture-v1.txt"
CLASSES = ["video_sd", "video_hd", "video_4k", "bulk", "web", "voip"]


def classifier_confusion(path: Path = FIXTURE) -> tuple[float, list[list[int]]]:
    """Held-out accuracy and confusion matrix (rows true, columns predicted) of the shipped forest
    from the trainer's fixture (whose predictions the Rust test checks the forest reproduces)."""
    cm = [[0] * len(CLASSES) for _ in CLASSES]
    for line in path.read_text().splitlines():
        if line.startswith("row "):
            _, t, p, *_ = line.split()
            cm[int(t)][int(p)] += 1
    n = sum(map(sum, cm))
    return sum(cm[i][i] for i in range(len(CLASSES))) / n, cm


def _check_classifier(run: SuiteRun) -> ClaimResult:
    acc, cm = classifier_confusion()
    rows = "; ".join(f"{c}: " + " ".join(str(x) for x in row) for c, row in zip(CLASSES, cm))
    # What the forest made of the simulated flows (the suite's flows carry app_class, so this
    # is reported, not used).
    seen: dict[str, dict[str, int]] = {}
    for _, d in _docs(run, "v1-vwire"):
        for f, name in zip(d["data"]["flows"], ("video (30 Mb/s paced)", "greedy")):
            for p in f["split"]["periods"]["predicted"]:
                if p:
                    seen.setdefault(name, {}).setdefault(p, 0)
                    seen[name][p] += 1
    sim = "; ".join(f"{k}: " + ", ".join(f"{c} ×{n}" for c, n in sorted(v.items())) for k, v in seen.items())
    ok = acc >= 0.95
    return ClaimResult(f"held-out accuracy {acc * 100:.1f}% ({sum(map(sum, cm))} flows); confusion (rows true, "
                       f"columns {' '.join(CLASSES)}): {rows}", ok,
                       f"on the simulated V1 flows the forest predicted — {sim} — the synthetic training video is "
                       "segment-paced ON/OFF, our video a constant-rate stream, so the suite sets app_class",
                       {"accuracy": acc, "confusion": cm, "simulated": seen})


def claims() -> list[Claim]:
    return [
        Claim("V1", "4K video (30 Mb/s) to a receiver walking 3 ft ↔ 75 ft beside a greedy download",
              "sustained with VW; dips without", "vwire ≥ 95% of 1 s bins ≥ 30 Mb/s; without < 80%", _check_v1),
        Claim("V2", "Delay of a 1 Mb/s flow beside 1…3 greedy flows, 3 ft and 75 ft",
              "−59.9% … −89.5%; ≥ −60% with one", "≥ −50% with one; reduction grows with N and with distance",
              _check_v2),
        Claim("V3", "Split BBR (wire) + CUBIC (WiFi) vs end-to-end CUBIC and BBR, wire 10 ms, loss 0–4%",
              "+30.7% at 75 ft without loss; BBR holds, CUBIC falls",
              "split ≥ both (2% tolerance) at every loss; ≥ +15% vs CUBIC at 75 ft, no loss", _check_v3),
        Claim("V4", "End-to-end BBR over a WiFi bottleneck gets about B·r/R", "analysis, §III-B",
              "within 25% of B·r/R with its own r and R", _check_v4),
        Claim("VX1", "Beyond the paper: vwire vs a modern AP (FQ-CoDel + airtime + AQL) on V1 and V2",
              "—", "vwire sustains the video in at least as many bins", _check_modern),
        Claim("VX2", "Flow classifier (shipped random forest) on held-out synthetic flows", "not published",
              "accuracy ≥ 95%", _check_classifier),
    ]


# ------------------------------------------------------------------ figures


def figures(run: SuiteRun) -> list[Figure]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = []
    fig, ax = plt.subplots(figsize=(7.2, 3.6))
    for m in MODES:
        docs = _docs(run, f"v1-{m}")
        if docs:
            b = _bins(docs[0][1])
            ax.plot(range(len(b)), [x / 1e6 for x in b], color=COLOR[m], label=MODE_LABEL[m], lw=1.2)
    ax.axhline(VIDEO_BPS / 1e6, color="grey", ls=":", lw=1)
    ax.set_xlabel("time after warm-up (s); receiver at 3 ft at 0 and 60 s, 75 ft at 30 s")
    ax.set_ylabel("video goodput (Mb/s)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out.append(Figure("V1: 4K video beside a greedy download (Fig. 3)", "1 s bins of the 30 Mb/s flow, first seed.", fig))

    fig, axes = plt.subplots(1, 2, figsize=(8.0, 3.4), sharey=True)
    for ax, d in zip(axes, (NEAR, FAR)):
        for m in MODES:
            dl = _v2_delays(run, m)
            ax.plot(N_GREEDY, [dl[(d, n)] for n in N_GREEDY], "o-", color=COLOR[m], label=MODE_LABEL[m])
        ax.set_title(DIST_LABEL[d])
        ax.set_xlabel("greedy flows")
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("1 Mb/s flow: router → device delay (ms)")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    out.append(Figure("V2: delay of a 1 Mb/s flow (Fig. 4)", "Mean one-way delay AP → station over seeds.", fig))

    g = _v3_goodput(run)
    fig, axes = plt.subplots(1, 2, figsize=(8.0, 3.4), sharey=True)
    for ax, d in zip(axes, (NEAR, FAR)):
        for m in V3_MODES:
            ax.plot([x * 100 for x in LOSSES], [g[(m, d, x)] / 1e6 for x in LOSSES], "o-", color=COLOR[m], label=V3_LABEL[m])
        ax.set_title(DIST_LABEL[d])
        ax.set_xlabel("wire loss (%)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("goodput (Mb/s)")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    out.append(Figure("V3: split BBR+CUBIC vs end to end (Fig. 5)", "Mean goodput over seeds; wire 10 ms.", fig))
    return out
