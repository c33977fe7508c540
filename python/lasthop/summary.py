"""A short human-readable summary of one result document (docs/results.md).

Per flow: goodput (Mb/s), one-way delay mean/p50/p95/p99 (ms), loss (%). Per station: PHY
rate, mean A-MPDU size per direction, share of the stations' airtime. Channel busy fraction,
collisions, events, and (when given) wall time. Missing fields print as "-" rather than fail:
the summary is a convenience, the result file is the record.
"""

from __future__ import annotations

from typing import Any

from .results import number as _num
from .units import format_duration, format_rate

__all__ = ["summarize"]



def _fmt(v: Any, scale: float = 1.0, digits: int = 2) -> str:
    x = _num(v)
    return "-" if x is None else f"{x * scale:.{digits}f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(header)]
    out = ["  " + "  ".join(h.rjust(w) for h, w in zip(header, widths))]
    out += ["  " + "  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    return out


def summarize(doc: dict[str, Any], wall_s: float | None = None) -> str:
    spec = doc.get("spec") or {}
    data = doc.get("data") or {}
    sim = spec.get("sim") or {}
    phy = spec.get("phy") or {}
    stats = data.get("stats") or {}
    channel = data.get("channel") or {}
    sim_ns = _num(stats.get("sim_time_ns")) or _num(sim.get("duration_ns")) or 0.0

    lines: list[str] = []
    head = f"{spec.get('name', '?')}  seed {doc.get('seed', '?')}  ({doc.get('code_version', '?')})"
    lines.append(head)
    if phy:
        n_sta = len(spec.get("stations") or [])
        lines.append(
            f"  {phy.get('standard', '?')} {phy.get('channel_width', '?')} MHz "
            f"GI {phy.get('guard_interval', '?')} ns, {n_sta} station(s), "
            f"{format_duration(int(sim_ns))} simulated"
            + (f" (warmup {format_duration(sim['warmup_ns'])})" if sim.get("warmup_ns") else "")
        )

    flows = data.get("flows") or []
    if flows:
        lines.append("flows")
        rows = []
        for f in flows:
            d = f.get("delay_ns") or {}
            rows.append([
                str(f.get("id", "?")), str(f.get("station", "?")), str(f.get("direction", "?")),
                str(f.get("pattern", "?")),
                _fmt(f.get("goodput_bps"), 1e-6),
                _fmt(d.get("mean"), 1e-6, 3), _fmt(d.get("p50"), 1e-6, 3),
                _fmt(d.get("p95"), 1e-6, 3), _fmt(d.get("p99"), 1e-6, 3),
                _fmt(f.get("loss"), 100.0),
            ])
        lines += _table(["flow", "sta", "dir", "pattern", "goodput Mb/s", "mean ms", "p50 ms",
                         "p95 ms", "p99 ms", "loss %"], rows)
        total = sum(_num(f.get("goodput_bps")) or 0.0 for f in flows)
        lines.append(f"  total goodput {total * 1e-6:.2f} Mb/s")
        tcp = [f for f in flows if f.get("tcp")]
        if tcp:
            lines.append("tcp (goodput is payload; delays are one-way per data segment)")
            trows = []
            for f in tcp:
                t = f["tcp"]
                if t.get("requests_completed") is not None:
                    rt = t.get("response_time_ns") or {}
                    app = (f"{t['requests_completed']} requests, response p50 {_fmt(rt.get('p50'), 1e-6, 1)} ms"
                           f" p95 {_fmt(rt.get('p95'), 1e-6, 1)} ms")
                elif t.get("bytes"):
                    done = t.get("completion_ns")
                    app = (f"{t['bytes'] / 1e6:g} MB in {done / 1e9:.3f} s" if done is not None
                           else f"{t['bytes'] / 1e6:g} MB, {(t.get('app_bytes_delivered') or 0) / 1e6:.2f} MB delivered")
                else:
                    app = "bulk"
                trows.append([str(f.get("id")), str(t.get("cc") or "?"), str(t.get("state") or "?"), _fmt(t.get("srtt_ns"), 1e-6, 1),
                              _fmt(t.get("min_rtt_ns"), 1e-6, 1), str(t.get("retransmits", 0)), str(t.get("rto_count", 0)), app])
            lines += _table(["flow", "cc", "state", "srtt ms", "min rtt ms", "retx", "RTOs", "application"], trows)
            ecn = [f for f in tcp if isinstance(f["tcp"].get("ecn"), dict)]
            if ecn:
                lines.append("ecn (CE marks made on the flow's packets, received, and the sender's reductions)")
                erows = [[str(f.get("id")), str(f["tcp"]["ecn"].get("mode", "?")), str(f["tcp"]["ecn"].get("ce_marked", "?")),
                          str(f["tcp"]["ecn"].get("ce_received", "?")), str(f["tcp"]["ecn"].get("reductions", "?"))]
                         for f in ecn]
                lines += _table(["flow", "mode", "CE marked", "CE received", "reductions"], erows)

    stations = data.get("stations") or []
    if stations:
        lines.append("stations")
        air = [(_num(s.get("airtime_tx_ns")) or 0.0) + (_num(s.get("airtime_rx_ns")) or 0.0)
               for s in stations]
        total_air = sum(air)
        rows = []
        for s, a in zip(stations, air):
            rate = s.get("phy_rate_bps")
            rows.append([
                str(s.get("id", "?")), str(s.get("mcs", "?")), str(s.get("nss", "?")),
                format_rate(int(rate)) if isinstance(rate, int) and rate > 0 else "-",
                _fmt(s.get("mean_ampdu_down"), 1.0, 1), _fmt(s.get("mean_ampdu_up"), 1.0, 1),
                f"{100.0 * a / total_air:.1f}" if total_air > 0 else "-",
            ])
        lines += _table(["sta", "mcs", "nss", "phy rate", "A-MPDU down", "A-MPDU up",
                         "airtime %"], rows)

    busy = _num(channel.get("busy_ns"))
    parts = []
    if busy is not None and sim_ns > 0:
        parts.append(f"busy {100.0 * busy / sim_ns:.1f}%")
    if "tx_attempts" in channel:
        parts.append(f"tx attempts {channel['tx_attempts']}")
    if "collisions" in channel or "collisions" in stats:
        parts.append(f"collisions {channel.get('collisions', stats.get('collisions'))}")
    if "beacons" in stats:
        parts.append(f"beacons {stats['beacons']}")
    if parts:
        lines.append("channel  " + ", ".join(parts))

    events = _num(stats.get("events"))
    run = []
    if events is not None:
        run.append(f"{int(events)} events")
    if "mpdus_delivered" in stats:
        run.append(f"{stats['mpdus_delivered']} MPDUs delivered")
    if wall_s is not None:
        run.append(f"wall {wall_s:.2f} s")
        if events is not None and wall_s > 0:
            run.append(f"{events / wall_s / 1e6:.2f} M events/s")
    if run:
        lines.append("run      " + ", ".join(run))
    return "\n".join(lines)
