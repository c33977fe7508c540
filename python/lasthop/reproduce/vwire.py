"""vwire: "Virtual Wires: Rethinking WiFi networks" (Yang, Jiang, Misra, Rubenstein).

The split proxy at the AP (`world/hosts/vwire.rs`): each TCP download ends at the AP and a second
connection carries it to the station; with `[vwire]` a classifier → utility optimizer → token
scheduler allocates WiFi airtime every 2 s. The Virtual Wires method is covered by Columbia
University patents (US 10,687,341 B2 and US 11,297,634).

Setup (the paper's §IV where it is specific, documented choices where not): 802.11n at 2.4 GHz,
20 MHz, short GI, two spatial streams, Minstrel-HT (a home router; the paper's Linksys WRT1200AC
on 2.4 GHz); receivers at 3 ft (0.9 m) and 75 ft (22.9 m). Server behind the AP on 1 Gb/s with
10 ms one-way delay (the paper's "10 ms to the Google CDN").

The link at each distance. §IV states no PHY or transport rate at 3 ft or 75 ft (its Fig. 5
plots them, but not in numbers the text gives); what it states about the far link is that it is
weak ("with weaker channel quality", losses at 75 ft reach end-to-end CUBIC) and that it still
carries the 4K video's 32 Mb/s step beside a greedy flow once Virtual Wires gives it the airtime
(§IV.1: "maintain its throughput demand all the way"), i.e. a lone download there gets at least
32 Mb/s. The far link is therefore placed with a log-distance exponent of 4.5 (the paper's room
had ~50 visible APs), which leaves 75 ft at SNR ≈ 13 dB, MCS 2–4 of two streams (≈ 40–60 Mb/s
PHY) and a lone TCP download at ≈ 33 Mb/s — just above the 32 Mb/s the paper's V1 needs — and
3 ft at the top rate (144 Mb/s PHY, ≈ 109 Mb/s TCP). V1 reports the rates measured in the run.
No rate of the paper constrains it further, so nothing is calibrated to a number of the paper;
a weaker far link (the rate already falling at 27 ft, where the paper's walk turns "weak", t = 10
s) would leave 75 ft below the 32 Mb/s the paper's V1 sustains, with a single-slope channel.

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
* V4: end-to-end BBR vs B·r/R (§III-B) where the paper's BBR crosses its WiFi link: V3's setup
  (Fig. 5: wire delay 10 ms, 3 ft and 75 ft) without wire loss, BBR as Linux had it before the
  ACK-aggregation estimator (the analysis' BBR; "tcp_bbr: adapt cwnd based on ack aggregation
  estimation" came with Linux 5.1), B the saturated UDP goodput of the same link, r and R the BBR
  flow's own minimum and mean RTT. The `tcp-baselines` suite checks the same expression on its
  own link.

Beyond the paper: the same V1/V2 scenarios behind a modern AP (FQ-CoDel per station, airtime
fairness, firmware queue with AQL) without the proxy; the classifier's held-out accuracy and
confusion matrix from the trainer's fixture.
"""
from __future__ import annotations

import copy
from pathlib import Path

from . import tcp_baselines
from .framework import Check, Claim, ClaimResult, Figure, SuiteRun, SweepDef, paired, ratio
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
# V3's interference ablation (§IV: "approximately 50 APs visible to our WiFi router, causing
# interference"; the paper gives no level): bursts of 10 ms at 20 dB over the noise floor that
# the cell does not sense, on average one every V3_GAPS, at 75 ft without wire loss.
V3_BURST = {"on": "10ms", "inr_db": 20.0}
V3_GAPS = ["1s", "300ms", "100ms"]
V3_INTERF_MODES = ["e2e-cubic", "split"]
V3_PAPER_GAIN = 0.307  # §IV-3: the split's gain at 75 ft without wire loss
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


def _v1_strict() -> dict:
    """V1's ablation: Algorithm 1 read literally — a packet without tokens is stored until its
    class has tokens again (line 9), never sent beyond the allocation."""
    s = _v1("vwire")
    s["vwire"]["work_conserving"] = False
    s["name"] = "vwire-v1-vwire-strict"
    return s


def _v1_fast() -> dict:
    """V1's ablation of the allocation's lag: the feedback period at 0.5 s instead of the paper's
    2 s (§III-F: "updated every 2 seconds"), so b_i follows the walking receiver's L_i sooner."""
    s = _v1("vwire")
    s["vwire"]["period"] = "500ms"
    s["name"] = "vwire-v1-vwire-fast"
    return s


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


def _v3_interfered(mode: str) -> dict:
    """V3's ablation: the lossless 75 ft run of `mode` with bursts of interference
    (`[channel.interference]`, its gap swept)."""
    s = _v3(mode)
    s["stations"][0]["distance_m"] = FAR
    s["channel"]["interference"] = {**V3_BURST, "off": V3_GAPS[0]}
    s["name"] = f"vwire-v3-interference-{mode}"
    return s


def _v4(kind: str) -> dict:
    """V4's runs: V3's end-to-end BBR without the ACK-aggregation estimator ("bbr"), or saturated
    UDP on the same link ("udp": its capacity B)."""
    s = _v3("e2e-bbr")
    s["name"] = f"vwire-v4-{kind}"
    if kind == "udp":
        s["flows"] = [{"stations": 0, "direction": "down", "pattern": "saturated", "packet_size": 1500}]
    else:
        s["flows"][0]["extra_acked"] = False
    return s


def sweeps(quick: bool) -> list[SweepDef]:
    dist = ("stations[0].distance_m", [NEAR, FAR])
    out = []
    for m in MODES:
        out.append(SweepDef(f"v1-{m}", _v1(m), [], seeds=5, quick_seeds=3))
        for n in N_GREEDY:
            out.append(SweepDef(f"v2-{m}-n{n}", _v2(m, n), [dist], seeds=10, quick_seeds=3,
                                quick={"sim": {"duration": "12s"}}))
    out.append(SweepDef("v1-vwire-strict", _v1_strict(), [], seeds=5, quick_seeds=3))
    out.append(SweepDef("v1-vwire-fast", _v1_fast(), [], seeds=5, quick_seeds=3))
    for m in V3_MODES:
        # 80 seeds in full: with 10, 20 and 40 the 75 ft gain's interval straddled its band's lower edge.
        out.append(SweepDef(f"v3-{m}", _v3(m), [dist, ("wired.loss", LOSSES)], seeds=80, quick_seeds=3,
                            quick={"sim": {"duration": "12s"}}))
    for m in V3_INTERF_MODES:
        out.append(SweepDef(f"v3-interference-{m}", _v3_interfered(m), [("channel.interference.off", V3_GAPS)],
                            seeds=20, quick_seeds=3, quick={"sim": {"duration": "12s"}}))
    for kind in ("bbr", "udp"):
        out.append(SweepDef(f"v4-{kind}", _v4(kind), [dist], seeds=10, quick_seeds=3,
                            quick={"sim": {"duration": "12s"}}))
    return out


# ------------------------------------------------------------------ data


def _docs(run: SuiteRun, sweep: str) -> list[tuple[dict, dict]]:
    return list(run.docs(sweep))


def _vals(d: dict) -> list[float]:
    return [d[k] for k in sorted(d)]


def _bins(doc: dict, flow: int = 0) -> list[float]:
    ts = doc["data"]["timeseries"]
    skip = doc["spec"]["sim"]["warmup_ns"] // ts["bin_ns"]
    return ts["flow_goodput_bps"][flow][skip:]


def _share(doc: dict) -> float:
    """Share of 1 s bins after warm-up in which the video delivered ≥ 30 Mb/s (−2 %)."""
    b = _bins(doc)
    return sum(1 for x in b if x >= VIDEO_BPS * (1 - BIN_TOL)) / len(b)


def _v1_shares(run: SuiteRun, mode: str) -> dict[int, float]:
    return run.per_seed(f"v1-{mode}", _share)


def _delay_ms(doc: dict) -> float:
    """Router → device one-way delay of flow 0's data, ms."""
    f = doc["data"]["flows"][0]
    m = f["delay_ns"]["mean"] / 1e6
    return m if f.get("split") else m - WIRED_DELAY_MS


def _v2_per_seed(run: SuiteRun, mode: str) -> dict[tuple[float, int], dict[int, float]]:
    """{(distance, N): {seed: delay ms}}."""
    out: dict[tuple[float, int], dict[int, float]] = {}
    for n in N_GREEDY:
        for o, s, d in run.seeded(f"v2-{mode}-n{n}"):
            out.setdefault((float(o["stations[0].distance_m"]), n), {})[s] = _delay_ms(d)
    return out


def _v2_delays(run: SuiteRun, mode: str) -> dict[tuple[float, int], float]:
    return {k: _mean(v.values()) for k, v in _v2_per_seed(run, mode).items()}


def _v3_per_seed(run: SuiteRun) -> dict[tuple[str, float, float], dict[int, float]]:
    out: dict[tuple[str, float, float], dict[int, float]] = {}
    for m in V3_MODES:
        for o, s, d in run.seeded(f"v3-{m}"):
            k = (m, float(o["stations[0].distance_m"]), float(o["wired.loss"]))
            out.setdefault(k, {})[s] = d["data"]["flows"][0]["goodput_bps"]
    return out


def _v3_goodput(run: SuiteRun) -> dict[tuple[str, float, float], float]:
    return {k: _mean(v.values()) for k, v in _v3_per_seed(run).items()}


def _v3_interference(run: SuiteRun) -> dict[str, dict[str, float]]:
    """The interference ablation: {gap: {"gain": mean of the split's per-seed gain over
    end-to-end CUBIC, "cubic"/"split": mean goodput b/s, "drops": end-to-end CUBIC's MPDUs dropped
    at the retry limit per run}}."""
    per: dict[tuple[str, str], dict[int, dict]] = {}
    for m in V3_INTERF_MODES:
        for o, s, d in run.seeded(f"v3-interference-{m}"):
            per.setdefault((m, o["channel.interference.off"]), {})[s] = d["data"]["flows"][0]
    out = {}
    for gap in V3_GAPS:
        c, sp = per.get(("e2e-cubic", gap), {}), per.get(("split", gap), {})
        gp_c = {k: f["goodput_bps"] for k, f in c.items()}
        gp_s = {k: f["goodput_bps"] for k, f in sp.items()}
        out[gap] = {"gain": _mean(x - 1 for x in ratio(gp_s, gp_c)), "cubic": _mean(gp_c.values()),
                    "split": _mean(gp_s.values()), "drops": _mean(f["dropped_retry"] for f in c.values())}
    return out


def _link_rates(run: SuiteRun) -> dict[float, tuple[float, float, float]]:
    """Per distance (lone TCP goodput, mean downlink PHY rate, SNR dB) of the V3 split runs
    without wire loss (CUBIC from the AP, the path V1's video takes with vwire), means over
    seeds: what each position's link carries."""
    out: dict[float, list[tuple[float, float, float]]] = {}
    for o, _, d in run.seeded("v3-split"):
        if float(o["wired.loss"]) != 0.0:
            continue
        st = d["data"]["stations"][0]
        snr = d["data"]["timeseries"]["station_snr_db"][0]
        out.setdefault(float(o["stations[0].distance_m"]), []).append(
            (d["data"]["flows"][0]["goodput_bps"], st["mean_phy_rate_down_bps"], sum(snr) / len(snr)))
    return {k: tuple(_mean(x[i] for x in v) for i in range(3)) for k, v in out.items()}


# ------------------------------------------------------------------ claims


def _v1_missed(run: SuiteRun) -> dict:
    """Where the video's missed 1 s bins (vwire, every seed) fall. A period's record holds the
    goodput of the period that ends and the allocation made at its end, so the allocation in
    force during period i is record i − 1's. Per missed bin: its time, and whether the greedy
    flow stayed within the allocation in force (≤ 5 % above its b_i: no excess service)."""
    out: dict = {"bins": 0, "missed": 0, "greedy_within": 0, "t_s": [], "greedy_bps": []}
    for _, d in _docs(run, "v1-vwire"):
        data = d["data"]
        fl, ts = data["flows"], data["timeseries"]
        pv, pg = fl[0]["split"]["periods"], fl[1]["split"]["periods"]
        period_ns, bin_ns = data["vwire"]["period_ns"], ts["bin_ns"]
        skip = d["spec"]["sim"]["warmup_ns"] // bin_ns
        for b, x in enumerate(ts["flow_goodput_bps"][0]):
            if b < skip:
                continue
            out["bins"] += 1
            i = b * bin_ns // period_ns
            if x >= VIDEO_BPS * (1 - BIN_TOL) or not 1 <= i < len(pv["goodput_bps"]):
                continue
            out["missed"] += 1
            out["greedy_within"] += pg["goodput_bps"][i] <= 1.05 * pg["alloc_rate_bps"][i - 1]
            out["t_s"].append(b * bin_ns / 1e9)
            out["greedy_bps"].append(ts["flow_goodput_bps"][1][b])
    return out


def _v1_why(m: dict, fast: list[float], near_bps: float, far_bps: float) -> str:
    """What the missed bins (`_v1_missed`) show, with the airtime arithmetic of the far link and
    the lag ablation (`fast`: the video's share of bins per seed of `v1-vwire-fast`)."""
    if not m["missed"]:
        return ""
    ts = sorted(m["t_s"])
    walk = sum(1 for t in ts if t < 34)
    # At 75 ft: the walker is there at t = 30 s; bins within 4 s of it.
    far_g = [g for t, g in zip(m["t_s"], m["greedy_bps"]) if 26 <= t < 34]
    txt = (f"{m['missed']} of {m['bins']} bins missed over the seeds, {walk} of them between t = {ts[0]:.0f} and "
           f"34 s (walking away and at 75 ft); in {m['greedy_within']} the greedy flow stayed within the allocation "
           "in force (≤ 5% above its b_i), so the scheduler served it no excess. The allocation is feasible only on "
           "paper: L_i is the PHY rate (iwinfo's, §III-F), which at 75 ft overstates what a second of airtime "
           f"carries (a lone download there gets {far_bps / 1e6:.0f} Mb/s, at 3 ft {near_bps / 1e6:.0f})")
    if far_g:
        g = _mean(far_g)
        txt += (f": around 75 ft (t = 26–34 s) the video's 30 Mb/s needs {VIDEO_BPS / far_bps * 100:.0f}% of the "
                f"airtime and the greedy flow's {g / 1e6:.0f} Mb/s in the bins missed there "
                f"{g / near_bps * 100:.0f}% more")
    txt += "; while the receiver walks away the allocation, made every 2 s from the last L_i, lags the falling rate"
    if fast:
        txt += (f" (with the period at 0.5 s, sweep v1-vwire-fast, an ablation — the paper's is 2 s — the video keeps "
                f"{_mean(fast) * 100:.0f}% of the bins)")
    return txt


def _v1_strict_ablation(run: SuiteRun) -> tuple[str, dict]:
    """What withholding the excess does (the `v1-vwire-strict` sweep against `v1-vwire`): the
    video's share of bins, the greedy flow's goodput, and the periods the scheduler was managed."""
    out: dict = {}
    for name in ("v1-vwire", "v1-vwire-strict"):
        docs = _docs(run, name)
        if not docs:
            return "", {}
        managed = [sum(d["data"]["vwire"]["managed"]) / max(1, len(d["data"]["vwire"]["managed"])) for _, d in docs]
        out[name] = {"share": _mean(_share(d) for _, d in docs),
                     "greedy_bps": _mean(d["data"]["flows"][1]["goodput_bps"] for _, d in docs),
                     "managed": _mean(managed)}
    wc, st = out["v1-vwire"], out["v1-vwire-strict"]
    txt = (f"withholding any excess as Algorithm 1 reads literally (a packet without tokens waits for them, "
           f"`vwire.work_conserving = false`, sweep v1-vwire-strict) keeps the video in {st['share'] * 100:.0f}% of "
           f"the bins but holds the greedy flow to {st['greedy_bps'] / 1e6:.0f} Mb/s ({wc['greedy_bps'] / 1e6:.0f} "
           "with work conservation) over the run: flows held to their allocations measure U = Σ b̂_i/L_i no "
           "larger than what they were given, and the scheduler stays managed (in "
           f"{st['managed'] * 100:.0f}% of the periods: the WiFi-side sockets never stay cleared for the detector's "
           "1 s while the 30 Mb/s stream keeps data in flight), so airtime the video no longer needs is not handed "
           "back. The paper states both properties (§III-E: regulated by a token bucket, and work conserving) but "
           "not how its U grows back once flows are held to their shares")
    return txt, out


def _check_v1(run: SuiteRun) -> ClaimResult:
    sh = {m: _v1_shares(run, m) for m in MODES}
    s = {m: _mean(v.values()) for m, v in sh.items()}
    ablation, ablation_detail = _v1_strict_ablation(run)
    lr = _link_rates(run)
    far = lr.get(FAR, (float("nan"),) * 3)
    near = lr.get(NEAR, (float("nan"),) * 3)
    missed = _v1_missed(run)
    fast = [_share(d) for _, d in _docs(run, "v1-vwire-fast")]
    checks = [Check("with vwire: share of 1 s bins ≥ 30 Mb/s", _vals(sh["vwire"]), lo=0.95, unit="%", scale=100),
              Check("end to end (FIFO AP): share of 1 s bins ≥ 30 Mb/s", _vals(sh["e2e"]), hi=0.80, unit="%",
                    scale=100)]
    why = []
    if s["vwire"] < 0.95:
        why.append(f"with vwire the video misses {(1 - s['vwire']) * 100:.0f}% of the bins: "
                   f"{_v1_why(missed, fast, near[0], far[0])}. The paper gives no rate of its link along the walk (Fig. 3 plots "
                   "only the flows), so how much slack its far link left the 32 Mb/s step is not known; here the "
                   "channel's exponent places 75 ft just above it"
                   + (f"; {ablation}" if ablation else ""))
    if s["e2e"] > 0.80:
        why.append("without vwire the MAC's per-station round robin already gives the far receiver enough airtime")
    return ClaimResult(f"bins ≥ 30 Mb/s: vwire {s['vwire'] * 100:.0f}%, end to end {s['e2e'] * 100:.0f}% "
                       f"(modern AP {s['modern'] * 100:.0f}%); the link (V3's lone download, CUBIC from the AP): 3 ft "
                       f"{near[0] / 1e6:.0f} Mb/s at a mean PHY rate of {near[1] / 1e6:.0f} Mb/s (SNR {near[2]:.0f} dB), "
                       f"75 ft {far[0] / 1e6:.0f} Mb/s at {far[1] / 1e6:.0f} Mb/s (SNR {far[2]:.1f} dB)",
                       checks, "; ".join(why),
                       {**s, "per_seed": {m: _vals(v) for m, v in sh.items()}, "strict_ablation": ablation_detail,
                        "missed_bins": missed, "fast_ablation": _mean(fast) if fast else None},
                       miss_class="setup differs")


def _check_v2(run: SuiteRun) -> ClaimResult:
    e2e, vw = _v2_per_seed(run, "e2e"), _v2_per_seed(run, "vwire")
    red = {k: dict(zip(sorted(set(e2e[k]) & set(vw[k])), paired(vw[k], e2e[k], lambda a, b: 1 - a / b)))
           for k in e2e if k in vw}
    busy = [n for n in N_GREEDY if n >= 1]
    checks = []
    for d in (NEAR, FAR):
        lo = {s: min(red[(d, n)][s] for n in busy) for s in red[(d, busy[0])]}
        hi = {s: max(red[(d, n)][s] for n in busy) for s in red[(d, busy[0])]}
        checks += [Check(f"{DIST_LABEL[d]}: smallest reduction over N = 1…3", _vals(lo), lo=0.599, unit="%",
                         scale=100),
                   Check(f"{DIST_LABEL[d]}: largest reduction over N = 1…3", _vals(hi), hi=0.895, unit="%", scale=100)]
    for d in (NEAR, FAR):
        step = {s: min(red[(d, n + 1)][s] - red[(d, n)][s] for n in busy[:-1]) for s in red[(d, busy[0])]}
        checks.append(Check(f"{DIST_LABEL[d]}: smallest growth of the reduction from N to N + 1", _vals(step), lo=0.0,
                            unit=" points", scale=100))
    gain = {s: min(red[(FAR, n)][s] - red[(NEAR, n)][s] for n in busy) for s in red[(FAR, busy[0])]}
    checks.append(Check("smallest gain of the reduction at 75 ft over 3 ft (N = 1…3)", _vals(gain), lo=0.0,
                        unit=" points", scale=100))
    me, mv = _v2_delays(run, "e2e"), _v2_delays(run, "vwire")
    rm = {k: _mean(v.values()) for k, v in red.items()}
    txt = "; ".join(f"{DIST_LABEL[d]}: " + ", ".join(f"N={n} {mv[(d, n)]:.1f} vs {me[(d, n)]:.1f} ms "
                                                      f"({-rm[(d, n)] * 100:+.0f}%)" for n in N_GREEDY)
                    for d in (NEAR, FAR))
    why = []
    if any(rm[(d, n + 1)] < rm[(d, n)] for d in (NEAR, FAR) for n in busy[:-1]):
        why.append("the reduction does not grow with N: end to end one greedy flow already fills the AP's "
                   "1000-packet FIFO, so the baseline's delay cannot grow with N (3 ft, N = 1…3: "
                   + ", ".join(f"{me[(NEAR, n)]:.1f}" for n in busy) + " ms); the paper's Linksys WRT1200AC under "
                   "OpenWRT queues as much below its qdisc (its driver, mwlwifi, holds up to 768 frames per access "
                   "category and 256 more in its descriptor ring: sysadpt.h SYSADPT_TX_QUEUE_LIMIT = 3 x "
                   "SYSADPT_MAX_NUM_TX_DESC), and the paper gives neither its greedy flows' senders nor the OnHub's "
                   "queues, so what made its baseline's delay grow with N is not known; with the "
                   "proxy each greedy flow keeps its TCP small-queues budget (max(2 segments, pacing rate >> 7), as "
                   "Linux sizes it under mac80211) in the station's queue, so the 1 Mb/s flow's delay grows with N "
                   "(" + ", ".join(f"{mv[(NEAR, n)]:.1f}" for n in busy) + " ms)")
    if any(rm[(FAR, n)] < rm[(NEAR, n)] for n in busy):
        why.append("the reduction is not always larger at 75 ft: the same TSQ budgets take longer to drain at the "
                   "far receiver's lower rate, so the proxy's delay grows with distance too (75 ft: "
                   + ", ".join(f"{mv[(FAR, n)]:.1f}" for n in busy) + " ms)")
    if any(rm[(d, n)] < 0.599 or rm[(d, n)] > 0.895 for d in (NEAR, FAR) for n in busy):
        why.append("reductions fall outside the paper's 59.9–89.5%")
    return ClaimResult(txt, checks, "; ".join(why), {"reduction": {f"{d}/{n}": r for (d, n), r in rm.items()}},
                       miss_class="setup differs")


def _check_v3(run: SuiteRun) -> ClaimResult:
    g = _v3_per_seed(run)
    gm = _v3_goodput(run)
    seeds = sorted(g[("split", NEAR, 0.0)])
    worst = {s: min(g[("split", d, x)][s] / max(g[("e2e-cubic", d, x)][s], g[("e2e-bbr", d, x)][s])
                    for d in (NEAR, FAR) for x in LOSSES) for s in seeds}
    gain = paired(g[("split", FAR, 0.0)], g[("e2e-cubic", FAR, 0.0)], lambda a, b: a / b - 1)
    cubic_1 = {d: ratio(g[("e2e-cubic", d, LOSSES[1])], g[("e2e-cubic", d, 0.0)]) for d in (NEAR, FAR)}
    bbr_hi = {d: ratio(g[("e2e-bbr", d, LOSSES[-1])], g[("e2e-bbr", d, 0.0)]) for d in (NEAR, FAR)}
    checks = [Check("75 ft, no wire loss: split / end-to-end CUBIC − 1", gain, lo=0.20, hi=0.40, unit="%", scale=100),
              Check("lowest split / better end-to-end variant (every distance and loss)", _vals(worst), lo=0.98,
                    unit="%", scale=100)]
    for d in (NEAR, FAR):
        checks += [Check(f"{DIST_LABEL[d]}: CUBIC at {LOSSES[1] * 100:g}% / lossless", cubic_1[d], hi=0.50, unit="%",
                         scale=100),
                   Check(f"{DIST_LABEL[d]}: BBR at {LOSSES[-1] * 100:g}% / lossless", bbr_hi[d], lo=0.75, unit="%",
                         scale=100)]
    txt = "; ".join(f"{DIST_LABEL[d]}: " + ", ".join(
        f"{x * 100:g}% {gm[('split', d, x)] / 1e6:.0f}/{gm[('e2e-cubic', d, x)] / 1e6:.0f}/{gm[('e2e-bbr', d, x)] / 1e6:.0f}"
        for x in LOSSES) for d in (NEAR, FAR))
    retx = _mean(d["data"]["flows"][0]["tcp"]["retransmits"] for o, _, d in run.seeded("v3-e2e-cubic")
                 if float(o["wired.loss"]) == 0.0 and float(o["stations[0].distance_m"]) == FAR)
    mac_drop = _mean(d["data"]["flows"][0]["dropped_retry"] for o, _, d in run.seeded("v3-e2e-cubic")
                     if float(o["wired.loss"]) == 0.0 and float(o["stations[0].distance_m"]) == FAR)
    gmean = _mean(gain)
    why = []
    if not 0.20 <= gmean <= 0.40:
        why.append(f"at 75 ft without wire loss the split gains {gmean * 100:+.0f}% over end-to-end CUBIC, not "
                   f"+30.7%: the paper's gain comes from WiFi losses at 75 ft that reach end-to-end CUBIC (\"Cubic is "
                   f"frequently affected by packet losses on WiFi when the link is unreliable\"); in the model the "
                   f"MAC's retries repair all but a few (end-to-end CUBIC at 75 ft: {mac_drop:.1f} packets dropped "
                   f"after the retry limit and {retx:.0f} TCP retransmissions per run), so end-to-end CUBIC keeps "
                   f"{gm[('e2e-cubic', FAR, 0.0)] / 1e6:.0f} of the split's {gm[('split', FAR, 0.0)] / 1e6:.0f} Mb/s. "
                   "What it lacks is the paper's interference (\"approximately 50 APs visible to our WiFi router, "
                   "causing interference\"), whose level the paper does not give. " + _v3_interference_text(run))
    if _mean(worst.values()) < 0.98:
        bad = [(d, x) for d in (NEAR, FAR) for x in LOSSES
               if gm[("split", d, x)] < 0.98 * max(gm[("e2e-cubic", d, x)], gm[("e2e-bbr", d, x)])]
        why.append("the split is below the better end-to-end variant at "
                   + ", ".join(f"{DIST_LABEL[d]} {x * 100:g}%" for d, x in bad))
    return ClaimResult(f"split/CUBIC/BBR Mb/s by wire loss — {txt}; 75 ft no loss: split {gmean * 100:+.0f}% vs CUBIC",
                       checks, "; ".join(why), {"gain_far_noloss": gmean, **{f"{k[0]}/{k[1]}/{k[2]}": v
                                                                              for k, v in gm.items()}},
                       miss_class="model gap")


def _v3_interference_text(run: SuiteRun) -> str:
    """The interference ablation in words."""
    a = _v3_interference(run)
    rows = ", ".join(f"mean gap {gap}: {v['gain'] * 100:+.0f}% ({v['split'] / 1e6:.0f} vs {v['cubic'] / 1e6:.0f} "
                     f"Mb/s; end-to-end CUBIC's MPDUs dropped at the retry limit {v['drops']:.0f} per run)"
                     for gap, v in a.items())
    gains = [v["gain"] for v in a.values()]
    where = ("lies within that range" if gains and min(gains) <= V3_PAPER_GAIN <= max(gains)
             else "lies outside that range")
    return (f"With bursts of {V3_BURST['on']} at {V3_BURST['inr_db']:g} dB over the noise floor that the cell does "
            "not sense (sweeps v3-interference-*, an ablation of [channel.interference]), the far receiver loses "
            "bursts of frames that its retries cannot repair, and the split's gain over end-to-end CUBIC grows "
            f"with them: {rows}. The paper's {V3_PAPER_GAIN:+.1%} {where}; the paper does not give its room's level, so the "
            "row stays a miss")


def _check_v4(run: SuiteRun) -> ClaimResult:
    """§III-B's B·r/R on the paper's BBR runs (V3's setup, no wire loss): per distance and seed,
    the goodput over B·r/R, B the mean saturated UDP goodput of the link at that distance (both in
    IP octets, `tcp_baselines._ip_goodput`)."""
    checks, parts, detail, why = [], [], {}, []
    for d in (NEAR, FAR):
        at = lambda o, d=d: float(o["stations[0].distance_m"]) == d  # noqa: E731
        b = _mean(run.per_seed("v4-udp", lambda doc: doc["data"]["flows"][0]["goodput_bps"], at).values())
        g = run.per_seed("v4-bbr", tcp_baselines._ip_goodput, at)
        r = run.per_seed("v4-bbr", lambda doc: doc["data"]["flows"][0]["tcp"]["min_rtt_ns"] / 1e6, at)
        big_r = run.per_seed("v4-bbr", lambda doc: tcp_baselines._mean_rtt_ms(doc, skip_s=doc["spec"]["sim"]["warmup_ns"] / 1e9), at)
        rel = ratio(g, {s: b * r[s] / big_r[s] for s in r})
        checks.append(Check(f"{DIST_LABEL[d]}: goodput / (B·r/R)", rel, lo=0.75, hi=1.25))
        gm, rm, big_rm = _mean(g.values()), _mean(r.values()), _mean(big_r.values())
        parts.append(f"{DIST_LABEL[d]}: {gm / 1e6:.0f} Mb/s vs B·r/R = {b / 1e6:.0f}·{rm:.1f}/{big_rm:.1f} = "
                     f"{b * rm / big_rm / 1e6:.0f} Mb/s")
        why.append(f"{DIST_LABEL[d]} {gm / b:.0%} of B = {b / 1e6:.0f} Mb/s, {_mean(rel):.2f}× B·r/R, within min(B, "
                   f"2·B·r/R) = {min(b, 2 * b * rm / big_rm) / 1e6:.0f} Mb/s")
        detail[DIST_LABEL[d]] = {"B_bps": b, "r_ms": rm, "R_ms": big_rm, "goodput_bps": gm}
    return ClaimResult("; ".join(parts) + " (IP octets; V3's setup: wire 10 ms, no wire loss; BBR without the "
                       "ACK-aggregation estimator)", checks,
                       "BBR's window is cwnd_gain·B·r with cwnd_gain = 2 (BBR draft §4.6.4.2; Linux bbr_cwnd_gain), "
                       "not B·r as §III-B assumes: across the paper's own WiFi link BBR gets " + "; ".join(why)
                       + ", so the paper's B·r/R cannot follow from its BBR", detail,
                       miss_class="disagrees with the paper")


def _check_modern(run: SuiteRun) -> ClaimResult:
    vw, mo = _v1_shares(run, "vwire"), _v1_shares(run, "modern")
    dvw, dmo = _v2_delays(run, "vwire"), _v2_delays(run, "modern")
    d_vw = _mean(dvw[(d, n)] for d in (NEAR, FAR) for n in N_GREEDY[1:])
    d_mo = _mean(dmo[(d, n)] for d in (NEAR, FAR) for n in N_GREEDY[1:])
    diff = paired(vw, mo, lambda a, b: a - b)
    why = (f"the modern AP's airtime fairness sustains the video in {_mean(mo.values()) * 100:.0f}% of the bins, "
           f"vwire in {_mean(vw.values()) * 100:.0f}%")
    return ClaimResult(f"V1 bins ≥ 30 Mb/s: vwire {_mean(vw.values()) * 100:.0f}% vs modern AP "
                       f"{_mean(mo.values()) * 100:.0f}%; V2 1 Mb/s delay (N ≥ 1, mean): vwire {d_vw:.1f} ms vs modern "
                       f"AP {d_mo:.1f} ms (not tested: the paper argues only about airtime)",
                       [Check("V1: vwire's share of bins ≥ 30 Mb/s − the modern AP's", diff, lo=0.0, unit=" points",
                              scale=100)], why,
                       {"v1_share": {"vwire": _mean(vw.values()), "modern": _mean(mo.values())},
                        "v2_delay_vwire_ms": d_vw, "v2_delay_modern_ms": d_mo}, miss_class="model gap")


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
        for f, name in zip(d["data"]["flows"], ("video", "greedy")):
            for p in f["split"]["periods"]["predicted"]:
                if p:
                    seen.setdefault(name, {}).setdefault(p, 0)
                    seen[name][p] += 1
    video = seen.get("video", {})
    nv = sum(video.values())
    right = sum(v for c, v in video.items() if c.startswith("video"))
    sim = "; ".join(f"{k}: " + ", ".join(f"{c} ×{n}" for c, n in sorted(v.items())) for k, v in seen.items())
    return ClaimResult(f"held-out accuracy {acc * 100:.1f}% on {sum(map(sum, cm))} synthetic flows (confusion, rows "
                       f"true, columns {' '.join(CLASSES)}: {rows}); on the suite's own V1 flows the forest is wrong: "
                       f"it calls the 30 Mb/s video a video class in {right} of {nv} periods and \"bulk\" in "
                       f"{video.get('bulk', 0)} ({sim}), so the V1 and V2 runs set app_class and do not test "
                       "classification",
                       [Check("held-out accuracy (synthetic flows)", [acc], lo=0.95, unit="%", scale=100, exact=True)],
                       "the V1 video is misclassified because the synthetic training video is segment-paced "
                       "ON/OFF while the suite's video is a constant-rate stream; the band concerns the held-out "
                       "synthetic flows only",
                       {"accuracy": acc, "confusion": cm, "simulated": seen}, miss_class="model gap")


def claims() -> list[Claim]:
    v4 = next(c for c in tcp_baselines.claims() if c.id == "V4")
    return [
        Claim("V1", "4K video (30 Mb/s) to a receiver walking 3 ft ↔ 75 ft beside a greedy download",
              "sustained with VW; dips without", "vwire ≥ 95% of 1 s bins ≥ 30 Mb/s (−2%); end to end ≤ 80% (per "
              "seed)", _check_v1, "setup differs",
              "§IV.1, Fig. 3: \"able to maintain its throughput demand all the way\" read as ≥ 95% of 1 s bins (a "
              "bin may straddle a 2 s allocation change; the source writes every 10 ms, hence −2%); \"wild "
              "fluctuations and dips\" without it as ≤ 80%, a choice: the paper gives no share"),
        Claim("V2", "Delay of a 1 Mb/s flow beside 1…3 greedy flows, 3 ft and 75 ft",
              "−59.9% … −89.5%; ≥ −60% with one; more with N and at 75 ft",
              "every N = 1…3 at both distances: reduction 59.9–89.5%; reduction grows from N to N + 1 and from 3 ft to "
              "75 ft (per-seed differences ≥ 0)", _check_v2, "setup differs",
              "abstract and §IV.2, Fig. 4: \"reduced by 59.9%-89.5% depending on the congestion level\", \"more "
              "dramatic when there are more background flows\", \"even more pronounced\" at 75 ft"),
        Claim("V3", "Split BBR (wire) + CUBIC (WiFi) vs end-to-end CUBIC and BBR, wire 10 ms, loss 0–4%",
              "+30.7% at 75 ft without loss; BBR holds, CUBIC falls",
              "75 ft, no loss: split +20 … +40% vs CUBIC; split ≥ 98% of the better end-to-end variant at every "
              "distance and loss; CUBIC ≤ 50% of lossless at 1%, BBR ≥ 75% of lossless at 4% (per seed)", _check_v3,
              "model gap",
              "§IV.3, Fig. 5: +30.7% is one measurement, read as ±10 points; \"less observable at 3 feet\" "
              "allows the split 2% below the better variant; \"Cubic falls off\" read as losing at least half, "
              "\"BBR maintains its performance\" as keeping 75% (tcp-baselines T4's bar)"),
        Claim("V4", "End-to-end BBR across the paper's WiFi link (V3's setup: wire 10 ms, no wire loss, 3 ft and "
              "75 ft), aggregation estimator off", v4.published,
              "at each distance, goodput within ±25% of B·r/R with its own r and R (per seed)", _check_v4,
              v4.miss_class, v4.source + "; tested where §IV.3 (Fig. 5) runs BBR across the link"),
        Claim("VX1", "Beyond the paper's experiments: vwire vs a modern AP (FQ-CoDel + airtime fairness + AQL) on V1",
              "§II.A: airtime fairness \"lacks the expressivity\" to give a video the airtime it needs",
              "vwire's share of V1 bins ≥ 30 Mb/s at least the modern AP's (per-seed difference ≥ 0)",
              _check_modern, "model gap",
              "§II.A argues that utility-based allocation beats airtime fairness for a video that needs more "
              "airtime; the paper measures no such AP, so the band is the direction of its argument"),
        Claim("VX2", "Flow classifier (shipped random forest) on held-out synthetic flows", "not published",
              "held-out accuracy ≥ 95% (exact: the trainer's fixture)", _check_classifier, "model gap",
              "§III.C gives no accuracy; 95% is the project's bar for the shipped forest on its synthetic "
              "held-out set, which is not the suite's V1 traffic (see ours)"),
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
