"""`lasthop reproduce l4s` end to end (quick)."""
from __future__ import annotations

import json

from helpers import run_cli


def test_l4s_quick_reports_every_claim(tmp_path):
    out = tmp_path / "l4s"
    r = run_cli("reproduce", "l4s", "--quick", "-o", str(out), "-q", timeout=600)
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "claims.json").read_text())
    claims = {c["claim"]: c for c in doc["claims"]}
    assert set(claims) == {"L1", "L2", "L3", "L4", "LW1", "LW2", "LW3", "LW4", "LW5", "LW6", "LW7"}
    # DualPI2's L queue holds Prague's delay near its 1 ms step on a wired bottleneck.
    assert claims["L1"]["verdict"] == "holds", claims["L1"]
    # The WiFi rows report every marking point and threshold with both drivers.
    for cid in ("LW1", "LW2", "LW4"):
        assert claims[cid]["verdict"] == "reported"
        assert len(claims[cid]["detail"]) == 8, claims[cid]["detail"].keys()
    # With the pull driver the qdisc's sojourn is the wait to the air: marking at either point
    # gives the same runs.
    assert claims["LW1"]["detail"]["pull 2ms"] == claims["LW2"]["detail"]["pull 2ms"]
    # Behind a firmware queue, marking at the air at 1 ms starves Prague; at the qdisc it does not.
    assert sum(claims["LW2"]["detail"]["firmware 1ms"]["ratio"]) < 0.1
    assert sum(claims["LW1"]["detail"]["firmware 1ms"]["ratio"]) > 0.5
    # With the pull driver, Prague over QUIC fares as TCP Prague at every threshold (its rate
    # over CUBIC's within 0.1; starved at 1 ms in both).
    for th in ("1ms", "2ms", "5ms", "10ms"):
        quic, tcp = (sum(claims[c]["detail"][f"pull {th}"]["ratio"]) / 2 for c in ("LW4", "LW1"))
        assert abs(quic - tcp) < 0.1, (th, quic, tcp)
    # WQM's 2.5 ms bound on every station's FIFO keeps both flows' queues short even unmarked
    # (pull driver), where FIFO-1000 lets them grow; an aggctl download keeps its own queue a
    # few ms long with no mark at all, beside CUBIC's tens of ms.
    wqm = claims["LW5"]["detail"]
    assert len(wqm) == 8, wqm.keys()
    for flow in ("l4s_p99_ms", "classic_p99_ms"):
        assert sum(wqm["pull, WQM, no marking"][flow]) < 0.5 * sum(wqm["pull, FIFO-1000, no marking"][flow]), flow
    for drv in ("pull", "firmware"):
        agg = claims["LW6"]["detail"][drv]
        assert sum(agg["l4s_p99_ms"]) < 0.5 * sum(agg["classic_p99_ms"]) and min(agg["l4s_mbps"]) > 50, (drv, agg)
    # DualPI2 inside mac80211's flow queue marks Prague at its 1 ms step and holds its queue
    # near it with the pull driver, as DualPI2 per station does (LW3).
    for cid in ("LW3", "LW7"):
        pull = claims[cid]["detail"]["pull"]
        assert sum(pull["l4s_p99_ms"]) / len(pull["l4s_p99_ms"]) < 3.0 and min(pull["l4s_marked"]) > 100, (cid, pull)
    for c in claims.values():
        if c["verdict"] == "misses":
            assert c["miss_class"] and c["explanation"], c
    assert doc["tally"]["total"]["reported"] == 7


def test_bench_live_l4s_cell_marks_the_classic_ecn_flow_in_the_simulator(monkeypatch, capsys):
    """`bench --live l4s`'s cell, simulated: the classic ECN download (RFC 3168 CUBIC) is the one
    marked at the AP's CE threshold, and its queue stays far shorter than the other's; the table
    prints both hosts' rows. Without root the bench says so in one line."""
    import os

    from lasthop import cli
    from lasthop.live import bench_l4s

    sim = bench_l4s._simulate(bench_l4s.cell("firmware", "5ms", 6), 1)[0]
    assert sim["ce_marked"] > 10, sim
    assert sim["ecn_p99_ms"] < 0.5 * sim["plain_p99_ms"], sim
    assert 0 < sim["ratio"] < 1, sim
    off = bench_l4s._simulate(bench_l4s.cell("firmware", "off", 6), 1)[0]
    assert off["ce_marked"] < sim["ce_marked"], (off, sim)
    text = bench_l4s.table({"points": [{"driver": "firmware", "ce_threshold": "5ms", "simulator": sim, "emulator": sim}]})
    assert text.count("firmware  5ms") == 2, text
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert cli.main(["bench", "--live", "l4s", "-o", "/nonexistent/x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs root" in err, err


def test_bench_live_l4s_refuses_an_unknown_choice_or_a_controller_the_kernel_lacks(monkeypatch, capsys, tmp_path):
    """`--cc` and `--l4s-cell` outside their lists, and `--cc dctcp` on a kernel without
    tcp_dctcp: one line each, exit 2, nothing written."""
    from pathlib import Path

    from lasthop import cli
    from lasthop.live import bench_l4s

    out = tmp_path / "o"
    for args, want in ((["--cc", "reno"], "--cc = 'reno': one of cubic, dctcp"),
                       (["--l4s-cell", "he160"], "--l4s-cell = 'he160': one of vht80, vht20")):
        assert cli.main(["bench", "--live", "l4s", "-o", str(out), *args]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and want in err, err
    real = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: "reno cubic\n"
                        if str(self).endswith("tcp_available_congestion_control") else real(self, *a, **k))
    assert "no tcp_dctcp loaded (available: reno cubic)" in bench_l4s.kernel_cc_problem("dctcp")
    assert bench_l4s.kernel_cc_problem("cubic") is None
    assert not out.exists()
    # The simulator's side of --cc dctcp: its DCTCP, L4S-capable, is the flow the threshold marks.
    doc = bench_l4s.cell("pull", "5ms", 6, "dctcp", "vht20")
    assert doc["flows"][0]["cc"] == "dctcp" and doc["flows"][0]["ecn"] == "l4s"
    assert doc["phy"]["channel_width"] == 20 and doc["stations"][0]["mcs"] == 4
