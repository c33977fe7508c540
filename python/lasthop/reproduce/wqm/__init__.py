"""wqm: "Battling Latency in Modern Wireless Networks" (Showail & Shihada, IEEE Access 2018).

WQM sizes a node's interface queue from its drain time T = (backlog / R) / F — R the current tx
rate, F the free-channel fraction — halving it after two measurement intervals above 2.5 ms and
adding a packet after two below, between B_min (the A-MPDU length in use) and B_max (the BDP at
the top rate, equations (5)–(7)). `lasthop_algo::aqm::wqm` implements Algorithm 1; here it runs
at the AP and at every relay of 802.11n chains and is compared with a 1000-packet FIFO (Linux's
txqueuelen), CoDel, PIE — and FQ-CoDel with airtime-fair scheduling, the mac80211 default the
paper did not have.

Setup (the paper's §V where it is specific, documented choices where it is not): 802.11n 5 GHz,
40 MHz, short guard interval, up to three streams (450 Mb/s), Minstrel-HT on every link, nodes
10 m apart on one shared channel (one collision domain: no hidden nodes), ath9k aggregation
(whatever is queued for the next hop, no waiting, 4 ms PPDU limit, single frames at 6.5 Mb/s),
one TCP CUBIC bulk flow of 100 s (netperf in §V-B) from a server behind the AP (0.1 ms wired) to
the far end of the chain, and a ping every 20 ms to the same node whose round-trip time is the
latency reported (the paper's RTT CDFs).

The parking lot (Figs. 19–20, W5) runs as §V-C.2 ran it: "with and without activating the rate
control algorithm. When disabled, the link rates in the testbed are manually fixed to one of the
following rate: 6.5, 13, 65 or 144.4 Mb/s" — Minstrel-HT as above, and every link fixed at the
HT 20 MHz MCS that gives each rate (MCS 0, 1 and 7 with the 800 ns guard interval, MCS 15 with
400 ns; the paper names neither width nor guard interval, and no 40 MHz rate matches), aggregation
as ath9k does it at that rate (none at 6.5 Mb/s, §IV-B; within 4 ms above), Block Acks at the
basic rate the standard's rule picks for the data rate (6, 12, 24, 24 Mb/s). W5 averages each
flow's latency over all five settings before taking FIFO / WQM (see `_check_w5`).

The driver is the testbed's: ath9k on Linux 3.17.7 (§V-B), which keeps up to ATH_MAX_QDEPTH =
123 frames per access category in its own per-TID software queues below the qdisc
(`ap.driver = "ath9k"`, at the AP and at every relay; WQM sizes only the queue above it). With
the pull driver (no queue below the qdisc, ath9k since Linux 4.10) WQM's RTT falls to a few ms
and every FIFO / WQM ratio grows several-fold beyond the paper's (W3 without aggregation: 29–38×
where the paper has "up to 7×"; W5 with Minstrel: 11–18× for 8× / 6× / 4×; CoDel and PIE no
longer "as well as" WQM without aggregation), while with the ath9k stage those rows read as
published (W3 5–7×, CoDel and PIE within 30% of WQM; W5's 2- and 3-hop flows with Minstrel 5–6×)
and WQM's 3-hop RTT (23 ms) is nearer the paper's 49.5 ms (pull: 7 ms). Measured over 3 seeds of
60 s runs of the whole suite both ways. Relays with a radio per side cannot have the ath9k stage (one stage per node), so W1c
(beyond the paper, reported) runs with the pull driver.

Above that driver, Linux 3.17 had no per-station queues in mac80211 (they came with ath9k's
move to them in 4.10): a node's frames, whatever their next hop, pass its interface's one qdisc
per access category (`ap.qdisc_scope = "interface"`), so at a relay the ACKs and ping replies
for its parent queue behind the data for its child. FQ-CoDel, mac80211's per-station flow queue
and beyond the paper, keeps one queue per station (its own sweep, `<case>-fq`).

PIE is the testbed's too: Linux 3.17.7's sch_pie, run without parameters (§V-A), estimated the
queueing delay from the dequeue rate — backlog over an average rate measured in cycles of
10 000 bytes of departures (net/sched/sch_pie.c of Linux 3.x, `pie_process_dequeue` /
`calculate_probability`; RFC 8033 §5.2) — not from timestamps, the model's default (RFC 8033
§4.3, Linux's default since 5.5). So PIE here runs with `ap.pie_estimator = "dequeue_rate"`
(`lasthop_algo::aqm::pie::dq_rate`); PIE with timestamps runs beside it on the hop-count cases,
beyond the paper (W1's evidence compares the two). Its control law and parameters stay RFC
8033's (target 15 ms, update 15 ms, burst 150 ms; Linux 3.17: 20 ms, 30 ms, 100 ms, a
three-step scale of alpha and beta and 2 % more per update above 250 ms).

The hosts' transmit path is the testbed's as well. Linux dequeues a qdisc one packet at a time,
each handed through mac80211 to the driver before the next is taken (net/sched/sch_generic.c:
`__qdisc_run` → `qdisc_restart` → `dev_hard_start_xmit` → `ieee80211_subif_start_xmit` →
ath9k's `ath_tx_start`), so the frames ath9k takes whenever it has room again (until mac80211
stops the queue at ATH_MAX_QDEPTH) leave the qdisc a transmit-path time apart, not at one
instant: `ap.dequeue_cost` spaces them by DEQUEUE_COST at the AP and every relay
(`lasthop_wifi::mac::qdisc_run`). Only the disciplines' dequeue timestamps move (the frames are in
the driver at once), and it is sch_pie's rate estimate that notices: its 10 000-byte cycles close
inside a burst and read the host's pace, far above the link's, so PIE estimates a delay near
zero, never drops early and its RTT is FIFO-1000's, as the paper's PIE (W1, W4). The paper states
no per-packet cost, and the result does not hang on one. Over 3 seeds of 100 s, PIE's runs at 1, 2
and 3 hops and with 3 and 5 flows are identical for every cost from 10 ns to 5 µs — and identical to
FIFO-1000's (ping p50 38.1, 81.2, 133.1, 41.1 and 41.4 ms; with no cost 22.3, 46.4, 88.0, 25.4
and 25.8 ms). The estimate starts to bite at 10 µs at 2 hops and at 15–20 µs elsewhere (at 50 µs:
19, 40 and 80 ms at 1, 2 and 3 hops), where the delay a full FIFO-1000 reads at the host's pace
(1000 packets × the cost) nears PIE's 15 ms target. Without aggregation nothing leaves in bursts
and no cost up to 20 µs changes a run; FIFO and WQM never look at the time, and CoDel's sojourns
move by microseconds (its RTT within 0.4 ms at 2 µs). What a transmit path costs: the kernel's
pktgen documentation (Documentation/networking/pktgen.txt) measures 3.9–5.5 Mpps from one CPU of
a Xeon E5-2630, 0.18–0.25 µs a packet for the driver alone (no qdisc, no mac80211, the packet
reused), and one netperf TCP stream without TSO/GSO fills 10 Gb/s from one core of a Xeon
E5-2695 v2 (the cover letter of Linux 3.18's qdisc bulk dequeue), at most 1.2 µs a packet for
the whole TCP/IP, qdisc and driver path. No measurement of mac80211 and ath9k on a Core 2 Duo was
found; that path is longer and the CPU slower, plausibly a few µs. DEQUEUE_COST = 2 µs lies inside
the flat range, 5× below the cost at which the first run moves; a path of 10 µs or more (some
20 000 cycles a packet) would lower PIE's RTT at 2 and 3 hops.
"""
from __future__ import annotations

import math

from ..framework import Check, Claim, ClaimResult, SuiteRun, ratio
from ..framework import mean as _mean
from .setup import (ATH9K_QDEPTH, DEQUEUE_COST, DEQUEUE_FLAT, FLOWS, HOPS, JFI_FIFO_BAND, LABEL, OFDMA_MODES,
                    PAPER_SCHEMES, PARKING_FIXED, PARKING_SETTINGS, PIE_SOURCE, SCHEMES, SHORT_S, TSO, _parking_name,
                    _scope_name)
from .runs import (_ap_backlog, _cost, _fmt, _gp_one, _jfi_one, _m, _out, _ping_q, _pings, _secs, _seeded,
                   _setting_text, _span, _tcp_rtt)
from .figures import figures
from .setup import sweeps

__all__ = ["NAME", "TITLE", "SOURCE", "DESCRIPTION", "sweeps", "claims", "figures"]


NAME = "wqm"


TITLE = "WQM: aggregation-aware buffer sizing on 802.11n chains"


SOURCE = "Showail & Shihada, \"Battling Latency in Modern Wireless Networks\", IEEE Access 6 (2018); TARGETS W1–W7"


DESCRIPTION = ("802.11n 40 MHz SGI, up to 3 streams, Minstrel-HT, nodes 10 m apart on one channel, ath9k "
               "aggregation (4 ms, none at 6.5 Mb/s); CUBIC bulk flows of 100 s (15 s in quick mode) from a "
               "server behind the AP (0.1 ms wired) to the end of 1–3 hop chains, a 20 ms ping beside them. "
               "The parking lot (W5) runs with Minstrel-HT and with every link fixed at 6.5, 13, 65 or 144.4 "
               "Mb/s (HT 20 MHz MCS 0/1/7, 800 ns guard interval, and MCS 15, 400 ns), as §V-C.2 did; W5 "
               "averages each flow's latency over the five settings (its 6.5 and 13 Mb/s runs keep 100 s in quick "
               "mode: CUBIC needs some 25 s to fill FIFO-1000 there, and they simulate in under a second). "
               "Every forwarding node (AP and relays) runs the compared scheme on its interface queue: "
               "FIFO-1000, CoDel, PIE, FQ-CoDel with airtime-fair scheduling, or a FIFO sized by WQM (limit "
               "2.5 ms, 100 ms interval, AIMD). Driver: the pre-4.10 ath9k of the paper's testbed (Linux "
               "3.17.7, §V-B), which holds up to 123 frames per access category below the qdisc at every "
               "node (ap.driver = \"ath9k\"); WQM sizes only the queue above them, which is one per interface "
               "(ap.qdisc_scope = \"interface\": Linux 3.17 had no per-station queues, so a relay's ACKs and "
               "ping replies for its parent wait behind the data for its child). The pull driver (no queue "
               "below the qdisc) was measured too and overstates every FIFO / WQM ratio several-fold (W3: "
               "29–38× for the paper's 7×), so it is not the paper's setup. W1c (reported) needs relays "
               "with two radios and runs with the pull driver. PIE estimates its queueing delay from the "
               "dequeue rate, as Linux 3.17's sch_pie did (ap.pie_estimator = \"dequeue_rate\"); PIE with "
               "timestamps (RFC 8033 §4.3, the model's default) runs beside it on the hop-count cases. Every "
               "node dequeues its qdisc one packet per pass of its transmit path, as Linux's __qdisc_run, 2 µs a "
               "packet (ap.dequeue_cost; every cost from 10 ns to 5 µs gives the same runs).")


PAPER_PIE_3HOP_MS, PAPER_WQM_3HOP_MS = 261.3, 49.47


def _tso_text(run: SuiteRun, jfi: dict[str, dict[int, float]]) -> str:
    """W4's TSO ablation in words, beside the 3-flow runs' Jain indices `jfi` (per scheme, per seed)."""
    t = {"fifo": run.per_seed("flows3-tso", _jfi_one), "wqm": run.per_seed("flows3-tso-wqm", _jfi_one)}
    return (f"with the senders' TSO/GSO bursts as Linux 3.17 sent them (flows[].tso = \"{TSO}\": skbs of half a "
            "millisecond at the pacing rate, held back by tcp_tso_should_defer; sweep flows3-tso, an ablation on the "
            f"same seeds) FIFO's JFI is {_m(t['fifo']):.3f} (min {min(t['fifo'].values()):.3f}; without the bursts "
            f"{_m(jfi['fifo']):.3f}) and WQM's {_m(t['wqm']):.3f}: "
            + ("the bursts bring FIFO's flows to the paper's unfairness, so they are the missing part"
               if _m(t["fifo"]) <= JFI_FIFO_BAND[1] else
               "the bursts do not make FIFO-1000 unfair here, so they are not the missing part, which stays unidentified"))


def _check_w1(run: SuiteRun) -> ClaimResult:
    checks, parts, detail = [], [], {}
    for h in HOPS:
        r = _seeded(run, f"hops{h}", _ping_q())
        for s, lo in (("fifo", 5.0), ("pie", 5.0), ("codel", 2.0)):
            checks.append(Check(f"{h} hop(s): {LABEL[s]} / WQM", ratio(r[s], r["wqm"]), lo=lo, unit="×"))
        m = {s: _m(r[s]) for s in SCHEMES + ["pie_ts"]}
        parts.append(f"{h} hop(s): WQM {m['wqm']:.1f} ms, FIFO {m['fifo']:.1f}, PIE {m['pie']:.1f} (with "
                     f"timestamps {m['pie_ts']:.1f}), CoDel {m['codel']:.1f} (FQ-CoDel {m['fq_codel']:.1f})")
        detail[h] = m
    value = (f"ping p50 RTT, mean over seeds: {'; '.join(parts)} (paper, 3 hops: PIE {PAPER_PIE_3HOP_MS} → WQM "
             f"{PAPER_WQM_3HOP_MS} ms); PIE estimates its delay from the dequeue rate as {PIE_SOURCE}, the hosts "
             f"dequeuing {DEQUEUE_COST.replace('us', ' µs')} a packet (ap.dequeue_cost)")
    why = "; ".join(x for x in (_ratio_gap(run, checks, detail[max(HOPS)]["pie"], "at 3 hops"), _pie_note(checks)) if x)
    return ClaimResult(value, checks, why, {"p50_rtt_ms": detail})


def _ratio_gap(run: SuiteRun, checks: list[Check], pie_ms: float, where: str) -> str:
    """Evidence for a miss of the RTT ratios of W1 and W4, from the run's numbers (`pie_ms`:
    PIE's RTT `where`; the single-flow chains give the rest)."""
    bad = [c for c in checks if c.status() == "out" and "/ WQM" in c.label]
    if not bad:
        return ""
    why = []
    def span(s: str) -> list[float]:
        return [c.mean for c in bad if c.label.split(": ")[-1].startswith(LABEL[s])]

    def rng(xs: list[float], digits: int = 1) -> str:
        lo, hi = f"{min(xs):.{digits}f}", f"{max(xs):.{digits}f}"
        return lo if lo == hi else f"{lo}–{hi}"
    if span("pie"):
        ends = (min(HOPS), max(HOPS))
        r = {h: _seeded(run, f"hops{h}", _ping_q()) for h in ends}

        def at(s: str) -> str:
            return " and ".join(f"{_m(r[h][s]):.0f}" for h in ends)
        like_fifo = all(abs(_m(r[h]["pie"]) / _m(r[h]["fifo"]) - 1) < 0.05 for h in ends)
        why.append(f"PIE / WQM is {rng(span('pie'))}× (paper ≥ 5×): with PIE the RTT is {pie_ms:.0f} ms {where}; "
                   f"one flow over 1 and {ends[1]} hops: {at('pie')} ms (with timestamps {at('pie_ts')}, FIFO-1000 "
                   f"{at('fifo')}), where the paper's PIE let it grow to {PAPER_PIE_3HOP_MS} ms at 3 hops (at least "
                   f"5× WQM's, like the static buffer). " + _PIE_HOST +
                   ("; here too its RTT is FIFO-1000's, so the shortfall is FIFO-1000's own" if like_fifo else
                    "; here it stays below FIFO-1000's RTT, which the 100 s runs over 3 seeds did not show "
                    f"(PIE's runs were FIFO-1000's for every cost from {DEQUEUE_FLAT}): no part of the model "
                    "is identified"))
    if span("codel"):
        # The paper's one named instrument is web10g's TCP statistics (§V-B): the same ratio on the
        # download's own RTT samples rather than the ping's.
        tcp = {h: _seeded(run, f"hops{h}", _tcp_rtt) for h in HOPS}
        on_tcp = "/".join(f"{_mean(ratio(tcp[h]['codel'], tcp[h]['wqm'])):.2f}" for h in HOPS)
        why.append(f"CoDel / WQM is {rng(span('codel'), 2)}× (paper ≥ 2×, '2× compared to CoDel' in "
                   "§V-C.1): a smaller gap for which no part of the model is identified (CoDel timestamps, as "
                   "Linux's does). Nor is it the measure: on the download's own RTT samples (what the paper's "
                   f"web10g reports, §V-B; 100 ms bins after warm-up) CoDel / WQM is {on_tcp}× over "
                   f"{'/'.join(str(h) for h in HOPS)} hops")
    if span("fifo"):
        why.append(f"FIFO / WQM is {rng(span('fifo'))}× (paper ≥ 5×): the 123 frames the "
                   "ath9k stage holds below each qdisc are in both schemes' RTT")
    return "; ".join(why)


_PIE_HOST = (f"PIE here estimates its delay from the dequeue rate as {PIE_SOURCE} did, and the hosts dequeue "
             f"a burst of frames {DEQUEUE_COST.replace('us', ' µs')} a packet as Linux's __qdisc_run does (the "
             "transmit path through mac80211 to ath9k between two dequeues): the estimate's 10 000-byte cycles "
             "close inside a burst and read the host's pace, far above the link's, so PIE estimates a delay near "
             "zero, never drops early and leaves the queue to grow like FIFO-1000 — the same runs for every cost "
             f"from {DEQUEUE_FLAT} (3 seeds of 100 s at 1–3 hops and 3 and 5 flows; the paper states none, a "
             "Core 2 Duo's path plausibly takes a few µs), lower RTTs from 10 µs on, as 1000 packets × the cost "
             "nears PIE's 15 ms target")


def _pie_note(checks: list[Check]) -> str:
    """Why PIE / WQM is where it is, for the evidence of a claim that misses on another check
    (empty if a PIE check misses: `_ratio_gap` says it then)."""
    pie = [c for c in checks if "PIE / WQM" in c.label]
    if not pie or any(c.status() == "out" for c in pie):
        return ""
    fifo = {c.label.split(": ")[0]: c.mean for c in checks if "FIFO-1000 / WQM" in c.label}
    like_fifo = all(abs(c.mean / fifo.get(c.label.split(": ")[0], math.nan) - 1) < 0.05 for c in pie)
    lo, hi = min(c.mean for c in pie), max(c.mean for c in pie)
    return (f"PIE / WQM is {lo:.1f}–{hi:.1f}× (paper ≥ 5×)" + (", as FIFO-1000 / WQM" if like_fifo else "")
            + f": {_PIE_HOST}")


def _check_w2(run: SuiteRun) -> ClaimResult:
    checks, parts, detail = [], [], {}
    for h in HOPS:
        g = _seeded(run, f"hops{h}", _gp_one)
        cost = _cost(g)
        checks.append(Check(f"{h} hop(s): WQM's goodput cost vs FIFO", cost, hi=0.05, unit="%", scale=100))
        parts.append(f"{h} hop(s): FIFO {_m(g['fifo']):.0f} → WQM {_m(g['wqm']):.0f} Mb/s")
        detail[h] = {s: _m(g[s]) for s in SCHEMES}
    bad = _out(checks)
    return ClaimResult("; ".join(parts), checks,
                       f"{'; '.join(bad)} above 5%: the queue WQM sizes (with the driver's frames below it) runs "
                       "empty between TCP bursts, so the hop idles where FIFO-1000 still has frames" if bad else "",
                       {"goodput_mbps": detail})


def _scope_ratios(run: SuiteRun) -> dict[int, dict[str, float]]:
    """W3's ablation (`_scope_ablation`): per hop count beyond one, FIFO / WQM without aggregation
    with a qdisc per next hop (mean over its seeds), its seed count and FIFO-1000's RTT (ms)."""
    out = {}
    for h in HOPS[1:]:
        r = {"fifo": run.per_seed(_scope_name(h), _ping_q()), "wqm": run.per_seed(_scope_name(h) + "-wqm", _ping_q())}
        out[h] = {"fifo_over_wqm": _mean(ratio(r["fifo"], r["wqm"])), "n": len(r["wqm"]), "fifo_ms": _m(r["fifo"])}
    return out


def _scope_text(per: dict[int, dict[str, float]], one: float) -> str:
    """W3's ablation in words: `_scope_ratios` beside the 1-hop FIFO / WQM `one` (one next hop:
    the same queues in both scopes)."""
    return ("with a qdisc per next hop instead (ap.qdisc_scope = \"station\", mac80211's per-station queues; sweeps "
            + ", ".join(_scope_name(h) for h in per) + ", an ablation on the first seeds) FIFO / WQM is "
            + f"{one:.1f}× at {min(HOPS)} hop (the same queues) and "
            + ", ".join(f"{v['fifo_over_wqm']:.1f}× at {h} hops (n={v['n']}; FIFO-1000 {v['fifo_ms']:.0f} ms)"
                        for h, v in per.items())
            + (": the ratio falls with the hop count, as 'up to 7×' reads, so the interface qdisc is what raises it; "
               "the testbed's relays held less in front of their replies than this model's, for a reason not identified"
               if all(v["fifo_over_wqm"] <= one for v in per.values()) else
               ": the ratio still grows with the hop count, so the interface qdisc alone does not raise it"))


def _check_w3(run: SuiteRun) -> ClaimResult:
    checks, parts, detail = [], [], {}
    red: dict[int, list[float]] = {}
    near: list[Check] = []
    for h in HOPS:
        r = _seeded(run, f"hops{h}-noagg", _ping_q())
        red[h] = ratio(r["fifo"], r["wqm"])
        for s in ("codel", "pie"):
            near.append(Check(f"{h} hop(s): {LABEL[s]} / WQM", ratio(r[s], r["wqm"]), lo=1 / 1.3, hi=1.3, unit="×"))
        m = {s: _m(r[s]) for s in SCHEMES}
        parts.append(f"{h} hop(s): WQM {m['wqm']:.1f} ms, {_mean(red[h]):.1f}× below FIFO ({m['fifo']:.0f} ms); "
                     f"CoDel {m['codel']:.1f}, PIE {m['pie']:.1f} ms")
        detail[h] = m
    # "Up to 7×": the largest reduction (at the hop count with the largest mean) is 7× to the
    # paper's precision, and no hop count's exceeds it.
    top = max(HOPS, key=lambda h: _mean(red[h]))
    for h in HOPS:
        checks.append(Check(f"{h} hop(s): FIFO / WQM" + (" (the largest)" if h == top else ""), red[h],
                            lo=6.5 if h == top else None, hi=7.5, unit="×"))
    checks += near
    bad = _out(checks)
    why = []
    scope = _scope_ratios(run)
    if any("FIFO" in b for b in bad):
        why.append(f"FIFO / WQM is {', '.join(f'{_mean(red[h]):.1f}×' for h in HOPS)} at 1/2/3 hops where the paper "
                   "has 'up to 7×'" + (": without aggregation FIFO's standing queue is still growing at the end of a "
                   f"{_secs(run)} s run (the paper's runs last 100 s)" if run.quick else "")
                   + (f"; the largest is at {top} hops, where FIFO-1000's {detail[top]['fifo']:.0f} ms includes what "
                      "the relays' ping replies and ACKs wait behind their data in the one interface qdisc Linux 3.17 "
                      "gave each node (ap.qdisc_scope = \"interface\"; WQM's sized queue keeps that wait short); "
                      + _scope_text(scope, _mean(red[min(HOPS)])) if top > min(HOPS) and not run.quick else ""))
    if any("CoDel" in b or "PIE" in b for b in bad):
        far = [c for c in near if c.status() == "out"]
        why.append("not 'as well as' WQM: " + ", ".join(f"{c.label} {c.mean:.2f}" for c in far) +
                   " — CoDel and PIE hold their own sojourn targets (5 and 15 ms) in the qdisc, WQM its drain time")
    return ClaimResult("ping p50 RTT without A-MPDU, mean over seeds: " + "; ".join(parts), checks, "; ".join(why),
                       {"p50_rtt_ms": detail, "fifo_over_wqm": {h: _mean(v) for h, v in red.items()},
                        "station_scope": scope},
                       miss_class="setup differs" if run.quick and bad and all("FIFO" in b for b in bad) else None)


def _check_w4(run: SuiteRun) -> ClaimResult:
    checks, parts, detail = [], [], {}
    for n in FLOWS:
        name = "hops1" if n == 1 else f"flows{n}"
        r = _seeded(run, name, _ping_q())
        g = _seeded(run, name, _gp_one)
        for s in ("fifo", "pie"):
            checks.append(Check(f"{n} flow(s): {LABEL[s]} / WQM", ratio(r[s], r["wqm"]), lo=5.0, unit="×"))
        checks.append(Check(f"{n} flow(s): WQM's goodput cost vs FIFO", _cost(g), hi=0.13, unit="%", scale=100))
        line = (f"{n} flow(s): RTT WQM {_m(r['wqm']):.1f}, FIFO {_m(r['fifo']):.1f}, PIE {_m(r['pie']):.1f}, CoDel "
                f"{_m(r['codel']):.1f} ms; goodput FIFO {_m(g['fifo']):.0f}, WQM {_m(g['wqm']):.0f} Mb/s")
        if n == 3:
            j = _seeded(run, name, _jfi_one)
            checks.append(Check("3 flows: Jain index, WQM", list(j["wqm"].values()), lo=0.985))
            checks.append(Check("3 flows: Jain index, FIFO", list(j["fifo"].values()), lo=JFI_FIFO_BAND[0],
                                hi=JFI_FIFO_BAND[1]))
            line += f"; JFI WQM {_m(j['wqm']):.3f}, FIFO {_m(j['fifo']):.3f}"
            detail["jfi"] = {s: _m(j[s]) for s in SCHEMES}
        parts.append(line)
        detail[f"{n} flows"] = {"rtt": {s: _m(r[s]) for s in SCHEMES}, "goodput": {s: _m(g[s]) for s in SCHEMES}}
    bad = _out(checks)
    why = []
    gap = _ratio_gap(run, checks, detail["1 flows"]["rtt"]["pie"], "at one hop with one flow")
    if gap:
        why.append(gap)
    if bad and _pie_note(checks):
        why.append(_pie_note(checks))
    if any("Jain index, FIFO" in b for b in bad):
        why.append(f"FIFO's three flows share fairly (JFI {detail['jfi']['fifo']:.3f}, published 0.7): they are "
                   "identical CUBIC flows on one path, so the drops of the shared drop-tail queue fall on each in "
                   "proportion to its rate and they converge; the lock-out the paper describes ('a single flow may "
                   "fill up the buffer and starve others') needs drops that fall on one flow's bursts")
        tso = _tso_text(run, j)
        if tso:
            why.append(tso)
    if any("Jain index, WQM" in b for b in bad):
        why.append(f"WQM's flows share less fairly than published (JFI {detail['jfi']['wqm']:.3f})")
    if any("cost" in b for b in bad):
        why.append("WQM gives up more than 13% of FIFO's goodput")
    return ClaimResult("; ".join(parts), checks, "; ".join(why), detail)


W5_BANDS = {1: (7.5, 8.5), 2: (5.5, 6.5), 3: (4.0, None)}  # 8× and 6× to the paper's precision, "more than 4×"


def _check_w5(run: SuiteRun) -> ClaimResult:
    """Fig. 20's 8× / 6× / 4× per flow. §V-C.2 gives one ratio per flow for the whole figure —
    Minstrel and the four fixed rates — without saying how the settings were combined; the one
    way of combining results it describes is averaging ("we average the results over at least
    three runs"), so a flow's latency per scheme is its mean over every run of the figure (the
    five settings, one run each per seed: the same weight per setting) and the tested ratio is
    FIFO's over WQM's, per seed. The per-setting ratios and their plain mean are shown beside
    it, and the evidence of a miss says which readings would land in the bands."""
    checks, parts = [], []
    detail: dict = {"p50_rtt_ms": {}, "fifo_over_wqm": {}, "goodput_mbps": {}, "pooled": {}}
    each: dict[int, dict[str, float]] = {}  # per flow (hops), per setting: FIFO / WQM, mean over seeds
    other: dict[str, dict[tuple[int, str], float]] = {"codel": {}, "pie": {}}  # CoDel, PIE / WQM
    for i, h in enumerate(HOPS):
        r = {k: _seeded(run, _parking_name(k), _ping_q(ping=i)) for k in PARKING_SETTINGS}
        seeds = sorted(set.intersection(*(set(r[k][s]) for k in PARKING_SETTINGS for s in ("fifo", "wqm"))))
        pooled = {s: {seed: _mean(r[k][s][seed] for k in PARKING_SETTINGS) for seed in seeds} for s in ("fifo", "wqm")}
        lo, hi = W5_BANDS[h]
        checks.append(Check(f"{h}-hop flow: FIFO / WQM, RTT pooled over Minstrel and the 4 fixed rates",
                            ratio(pooled["fifo"], pooled["wqm"]), lo=lo, hi=hi, unit="×"))
        each[h] = {k: _mean(ratio(r[k]["fifo"], r[k]["wqm"])) for k in PARKING_SETTINGS}
        for s in other:
            for k in PARKING_SETTINGS:
                other[s][(h, k)] = _mean(ratio(r[k][s], r[k]["wqm"]))
        parts.append(f"{h}-hop flow: FIFO {_m(pooled['fifo']):.0f} → WQM {_m(pooled['wqm']):.1f} ms pooled "
                     f"({_mean(ratio(pooled['fifo'], pooled['wqm'])):.1f}×); per setting FIFO / WQM "
                     + ", ".join(f"{_setting_text(k)} {each[h][k]:.1f}×" for k in PARKING_SETTINGS)
                     + f" (their mean {_mean(each[h].values()):.1f}×)")
        for k in PARKING_SETTINGS:
            detail["p50_rtt_ms"].setdefault(k, {})[h] = {s: _m(r[k][s]) for s in PAPER_SCHEMES}
            detail["fifo_over_wqm"].setdefault(k, {})[h] = each[h][k]
        detail["pooled"][h] = {"fifo_ms": _m(pooled["fifo"]), "wqm_ms": _m(pooled["wqm"]),
                               "fifo_over_wqm": _mean(ratio(pooled["fifo"], pooled["wqm"])),
                               "mean_of_setting_ratios": _mean(each[h].values())}
    gp = []
    for k in PARKING_SETTINGS:
        g = _seeded(run, _parking_name(k), _gp_one)
        detail["goodput_mbps"][k] = {s: _m(g[s]) for s in PAPER_SCHEMES}
        gp.append(f"{_setting_text(k)} {_m(g['fifo']):.1f} → {_m(g['wqm']):.1f}")
    bl = _seeded(run, _parking_name("6.5"), _ap_backlog)
    detail["ap_backlog_6.5"] = {s: _m(bl[s]) for s in ("fifo", "wqm")}
    codel, pie = other["codel"], other["pie"]
    beside = (f"beside them (not tested), §V-C.2's other statements on Fig. 20: CoDel / WQM "
              f"{min(codel.values()):.2f}–{max(codel.values()):.1f}× over the flows and settings, with Minstrel "
              f"{_span([codel[(h, 'minstrel')] for h in HOPS])}× ('WQM defeats CoDel in all scenarios … halves "
              f"latency when Minstrel is enabled'); PIE / WQM at 6.5 Mb/s {_span([pie[(h, '6.5')] for h in HOPS])}× "
              f"('close to WQM performance'), at most {max(pie.values()):.1f}× ('in the worst case … 7×')")
    bad = [c for c in checks if c.status() == "out"]
    why = _w5_gap(bad, each, detail) if bad else ""
    return ClaimResult("ping p50 RTT, mean over seeds: " + "; ".join(parts) + "; total goodput FIFO → WQM (Mb/s) "
                       + ", ".join(gp) + "; " + beside, checks, why, detail)


def _w5_gap(bad: list[Check], each: dict[int, dict[str, float]], detail: dict) -> str:
    """Evidence for a miss of W5, from the run's numbers: which settings set the pooled ratio,
    and which other readings of §V-C.2 would put all three flows in their bands."""
    def fits(v: dict[int, float]) -> bool:
        return all((W5_BANDS[h][0] is None or v[h] >= W5_BANDS[h][0]) and
                   (W5_BANDS[h][1] is None or v[h] <= W5_BANDS[h][1]) for h in HOPS)

    def trio(v: dict[int, float]) -> str:
        return " / ".join(f"{v[h]:.1f}" for h in HOPS) + "×"
    rtt = detail["p50_rtt_ms"]
    slow = [k for k in PARKING_FIXED if float(k) <= 13]
    readings = {"the mean of the five per-setting ratios": {h: _mean(each[h].values()) for h in HOPS}}
    readings.update({f"{_setting_text(k)} alone": {h: each[h][k] for h in HOPS} for k in PARKING_SETTINGS})
    fit = [f"{name} ({trio(v)})" for name, v in readings.items() if fits(v)]
    miss = [f"{name} {trio(v)}" for name, v in readings.items() if not fits(v)]
    return ("; ".join(f"{c.label.split(':')[0]}: FIFO / WQM {c.mean:.1f}× pooled" for c in bad)
            + " (paper 8× / 6× / more than 4× for the 1/2/3-hop flows). The runs at "
            + " and ".join(_setting_text(k) for k in slow) + " set the pooled means: there FIFO-1000's RTT is "
            + ", ".join(f"{_span([rtt[k][h]['fifo'] / 1000 for h in HOPS])} s" for k in slow)
            + " against WQM's " + ", ".join(f"{_span([rtt[k][h]['wqm'] / 1000 for h in HOPS])} s" for k in slow)
            + " (per-setting ratios " + "; ".join(f"{_setting_text(k)} {trio({h: each[h][k] for h in HOPS})}"
                                                  for k in slow)
            + f"); at 6.5 Mb/s the gateway's interface queue holds {detail['ap_backlog_6.5']['wqm']:.1f} packets on "
            f"average with WQM and {detail['ap_backlog_6.5']['fifo']:.0f} with FIFO-1000, above the ath9k stage's up "
            f"to {ATH9K_QDEPTH} frames ({ATH9K_QDEPTH * 1500 * 8 / 6.5e6:.2f} s of airtime at 6.5 Mb/s) in both. "
            "§V-C.2 does not say how its one ratio per flow combines the five settings; other readings: "
            + "; ".join(miss)
            + (". Only " + " and ".join(fit) + " would land all three flows in their bands, and the text gives "
               "no reason to read the figures from it" if fit else ". None of them lands all three flows in "
               "their bands")
            + ". Fig. 20's per-setting latencies are not in the text, so which of the paper's runs differ "
            "from ours cannot be told; no part of the model is identified")


def _check_w6(run: SuiteRun) -> ClaimResult:
    p95 = run.per_seed("slow", lambda d: _tcp_rtt(d, 0.95))
    mean_rtt = run.per_seed("slow", _tcp_rtt)
    ping = run.per_seed("slow", _ping_q("p95"))
    return ClaimResult(f"TCP RTT mean {_m(mean_rtt):.0f} ms, p95 {_m(p95):.0f} ms (100 ms bins after warm-up); "
                       f"ping p95 {_m(ping):.0f} ms",
                       [Check("p95 of the TCP RTT", list(p95.values()), lo=2000, unit=" ms")],
                       f"the RTT's p95 is {_m(p95):.0f} ms: the 1000-packet FIFO (and the driver's frames below it) "
                       "at 6.5 Mb/s hold less than 2 s, or CUBIC does not keep them full",
                       {"tcp_rtt_ms": list(mean_rtt.values()), "tcp_rtt_p95_ms": list(p95.values())})


def _check_w7(run: SuiteRun) -> ClaimResult:
    paper = ("fifo", "codel", "pie")
    checks, parts, detail = [], [], {}
    for t in SHORT_S:
        m = {"sim.duration": f"{t}s"}
        p99 = _seeded(run, "short", _ping_q("p99"), **m)
        p50 = _seeded(run, "short", _ping_q("p50"), **m)
        g = _seeded(run, "short", _gp_one, **m)
        worst = {}
        for s in paper + ("wqm",):
            for seed, v in p99[s].items():
                worst[seed] = max(worst.get(seed, 0.0), v)
        best_other = {seed: min(p50[s][seed] for s in paper) for seed in p50["wqm"]}
        checks += [Check(f"{t} s: largest ping p99 of FIFO, CoDel, PIE, WQM", list(worst.values()), hi=150, unit=" ms"),
                   Check(f"{t} s: WQM / lowest of FIFO, CoDel, PIE (ping p50)", ratio(p50["wqm"], best_other), hi=1.0,
                         unit="×"),
                   Check(f"{t} s: WQM's goodput cost vs FIFO", _cost(g), hi=0.08, unit="%", scale=100)]
        parts.append(f"{t} s: ping p50 " + _fmt({s: _m(p50[s]) for s in SCHEMES}) + f", p99 FIFO {_m(p99['fifo']):.0f}"
                     f"/WQM {_m(p99['wqm']):.0f} ms; goodput FIFO {_m(g['fifo']):.0f}, WQM {_m(g['wqm']):.0f} Mb/s")
        detail[t] = {"p50_ms": {s: _m(p50[s]) for s in SCHEMES}, "p99_ms": {s: _m(p99[s]) for s in SCHEMES},
                     "goodput_mbps": {s: _m(g[s]) for s in SCHEMES}}
    bad = [c for c in checks if c.status() == "out"]
    why = "; ".join(f"{c.label} is {c.text().split(': ', 1)[1]}" for c in bad)
    if bad:
        why += (" — short flows should not build the buffers (every scheme under 150 ms), and WQM's sized queue "
                "should still give the lowest RTT at a goodput cost of at most 8%")
    return ClaimResult("; ".join(parts), checks, why, detail)


def _check_separate(run: SuiteRun) -> ClaimResult:
    """Beyond the paper: the 3-hop chain with each hop on its own channel (two-radio relays)."""
    r = _seeded(run, "hops3-sepch", _ping_q())
    g = _seeded(run, "hops3-sepch", _gp_one)
    shared = _seeded(run, "hops3", _gp_one)
    m = {s: _m(r[s]) for s in SCHEMES}
    red = {s: _mean(ratio(r[s], r["wqm"])) for s in ("fifo", "pie", "codel", "fq_codel")}
    return ClaimResult(f"ping p50 {_fmt(m)} (FIFO {red['fifo']:.1f}×, PIE {red['pie']:.1f}×, CoDel {red['codel']:.1f}×, "
                       f"FQ-CoDel {red['fq_codel']:.1f}× WQM's); goodput FIFO {_m(g['fifo']):.0f} (one shared channel: "
                       f"{_m(shared['fifo']):.0f}), WQM {_m(g['wqm']):.0f} Mb/s", [], "",
                       {"p50_rtt_ms": m, "goodput_mbps": {s: _m(g[s]) for s in SCHEMES}})


def _check_modern(run: SuiteRun) -> ClaimResult:
    """Beyond the paper: WQM against FQ-CoDel with airtime fairness, on every case."""
    rows = []
    for name in [f"hops{h}" for h in HOPS] + ["flows3", "flows5"]:
        r = _seeded(run, name, _ping_q())
        g = _seeded(run, name, _gp_one)
        rows.append(f"{name}: RTT WQM {_m(r['wqm']):.1f} vs FQ-CoDel {_m(r['fq_codel']):.1f} ms, "
                    f"goodput {_m(g['wqm']):.0f} vs {_m(g['fq_codel']):.0f} Mb/s")
    return ClaimResult("; ".join(rows), [], "", {})


def _check_ofdma(run: SuiteRun) -> ClaimResult:
    """Beyond the paper: WQM at an 802.11ax AP, single-user PPDUs against DL OFDMA."""
    rows, detail = [], {}
    for mode in OFDMA_MODES:
        r = _seeded(run, f"he-{mode}", lambda d: max(p["delay_ns"]["p50"] for p in _pings(d)) / 1e6)
        g = _seeded(run, f"he-{mode}", _gp_one)
        m = {k: _m(r[k]) for k in ("fifo", "fq_codel", "wqm")}
        gm = {k: _m(g[k]) for k in ("fifo", "fq_codel", "wqm")}
        rows.append(f"{'DL OFDMA' if mode == 'dl' else 'single-user'}: worst station's ping p50 WQM {m['wqm']:.1f}, "
                    f"FIFO-1000 {m['fifo']:.1f}, FQ-CoDel {m['fq_codel']:.1f} ms; goodput {gm['wqm']:.0f} / "
                    f"{gm['fifo']:.0f} / {gm['fq_codel']:.0f} Mb/s")
        detail[mode] = {"p50_rtt_ms": m, "goodput_mbps": gm}
    return ClaimResult("; ".join(rows), [], "", detail)


def claims() -> list[Claim]:
    return [
        Claim("W1", "Single flow over 1/2/3 hops: RTT of WQM vs FIFO-1000, PIE and CoDel",
              "≥ 5× lower than FIFO and PIE; ≥ 2× lower than CoDel; 3 hops 261.3 ms (PIE) → 49.5 ms",
              "per hop count and seed: FIFO / WQM ≥ 5, PIE / WQM ≥ 5, CoDel / WQM ≥ 2 (ping p50)", _check_w1,
              "model gap", "§V-C.1, Fig. 7: 'at least 5× compared to both PIE and the static buffer sizing "
              "scheme and 2× compared to CoDel' — the paper's figures (TARGETS.md relaxed them to 4× / 1.5× "
              "without a stated reason; not kept); compared on the ping's median RTT, as the paper's RTT CDFs "
              "do not say which statistic its ratios use"),
        Claim("W2", "Goodput cost of W1", "≤ 5%", "per hop count and seed: 1 − WQM / FIFO goodput ≤ 5%", _check_w2,
              "model gap", "§V-C.1: 'at the cost of at most 5% in goodput reduction' (TARGETS.md's 8% is the "
              "abstract's worst case over all experiments, not this one's; not kept)"),
        Claim("W3", "Aggregation disabled: WQM vs FIFO; vs CoDel/PIE", "up to 7×; about equal",
              "per seed FIFO / WQM ≤ 7.5× at every hop count and ≥ 6.5× at the one where it is largest; per hop "
              "count CoDel / WQM and PIE / WQM within 1/1.3–1.3×", _check_w3, "model gap",
              "§V-C.1, Figs. 9–10: 'up to 7× reduction in latency' is the largest over the hop counts, stated "
              "as an integer (±0.5); 'WQM performs as well as CoDel and PIE in terms of delay' gives no "
              "figure: ±30% is the project's reading of 'as well as'"),
        Claim("W4", "1/3/5 concurrent flows, one hop: RTT vs FIFO and PIE; Jain index with 3 flows",
              "≥ 5× at ≤ 13% goodput cost; JFI 0.99 vs 0.7 (FIFO)",
              "per flow count and seed: FIFO / WQM ≥ 5, PIE / WQM ≥ 5, goodput cost ≤ 13%; 3 flows: JFI of WQM "
              "≥ 0.985, of FIFO 0.65–0.75", _check_w4, "model gap",
              "§V-C.2, Figs. 15–16: 'at least 5× … at the cost of at most 13% less goodput'; 'JFI … 0.7, "
              "compared to 0.99 for WQM' — values given to two decimals (±0.005; ±0.05 for 0.7, one "
              "decimal); TARGETS.md's 4×, 15% and 'JFI ≥ 0.95 and above FIFO's' were wider without a reason"),
        Claim("W5", "Parking lot, flows of 1/2/3 hops, Minstrel and links fixed at 6.5/13/65/144.4 Mb/s: RTT vs FIFO",
              "8× / 6× / 4×",
              "per seed, each flow's ping p50 averaged over the five rate settings, FIFO / WQM: 1-hop flow "
              "7.5–8.5×, 2-hop 5.5–6.5×, 3-hop ≥ 4×", _check_w5, "model gap",
              "§V-C.2, Fig. 20: 'We repeat these experiments several times with and without activating the rate "
              "control algorithm. When disabled, the link rates in the testbed are manually fixed to one of the "
              "following rate: 6.5, 13, 65 or 144.4 Mb/s' … 'lowers the latency by 8× for the single hop flow, "
              "6× for the two hops flow and more than 4× for the three hops flow' — two values stated as integers "
              "(±0.5) and one bound (TARGETS.md's ≥ 5× / 4× / 3× turned the values into looser bounds; not kept). "
              "One ratio per flow for the five settings, and the text does not say how they are combined; the "
              "one way of combining runs it states is averaging ('we average the results over at least three "
              "runs'), so each flow's latency is averaged over all runs of the figure before the ratio is taken. "
              "The paper names no channel width or guard interval for the fixed rates: only HT 20 MHz gives "
              "them (MCS 0, 1, 7 with the 800 ns guard interval, MCS 15 with 400 ns)"),
        Claim("W6", "6.5 Mb/s link, 1000-packet FIFO: RTT under one bulk flow", "values exceeding 2 s (Fig. 1)",
              "p95 of the TCP RTT ≥ 2 s", _check_w6, "model gap",
              "§III-A, Fig. 1: 'RTT values exceeding 2 seconds' are peak values, not a mean: the band tests "
              "the 95th percentile of the TCP RTT (100 ms bins), as tcp-baselines W6"),
        Claim("W7", "Short flows (5/10/15 s): delay bounded", "≤ 150 ms in all cases; WQM best; ≤ 8% goodput loss",
              "per duration and seed: every scheme's ping p99 ≤ 150 ms; WQM's p50 below the lowest of FIFO, "
              "CoDel, PIE; goodput cost vs FIFO ≤ 8%", _check_w7, "model gap",
              "§V-C.1, Figs. 13–14: 'in all cases the delay is bounded to 150 ms … However, WQM is still "
              "achieving the best reduction in RTT compared to all other schemes … at the cost of at most 8% "
              "drop in goodput' (the bound is read at the CDF's top, p99)"),
        Claim("W1c", "Beyond the paper: 3 hops, each on its own channel: RTT of WQM vs FIFO-1000, PIE, CoDel",
              "not in the paper", "reported (no published figure applies)", _check_separate,
              source="the paper ran no chain with a channel per hop, and W1's ratios depend on the shared "
              "channel's contention, so no published figure gives this case a band; relays have a radio per "
              "side, which the ath9k driver stage cannot model, so this case runs with the pull driver",
              reported=True),
        Claim("W+", "Beyond the paper: WQM vs FQ-CoDel with airtime fairness (the mac80211 default)",
              "not in the paper", "reported whichever wins", _check_modern, reported=True),
        Claim("W+2", "Beyond the paper: WQM at an 802.11ax AP (80 MHz, 4 stations at HE-MCS 9/7/4/2, a CUBIC "
              "download and a ping each), single-user PPDUs vs DL OFDMA", "not in the paper",
              "reported whichever wins", _check_ofdma, reported=True),
    ]

