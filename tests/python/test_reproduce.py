"""`lasthop reproduce`: registry, bad arguments, and the phy-mac suite end to end (quick)."""
from __future__ import annotations

import json
import re

from helpers import run_cli


def test_list_names_every_suite_and_claim():
    r = run_cli("reproduce", "--list")
    assert r.returncode == 0, r.stderr
    assert "phy-mac" in r.stdout
    for cid in ("PM1", "PM2", "PM3", "PM4", "PM5"):
        assert cid in r.stdout


def test_unknown_suite_is_one_line_exit_2(tmp_path):
    r = run_cli("reproduce", "no-such-paper", "-o", str(tmp_path / "out"))
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "no-such-paper" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()


def test_phy_mac_quick_end_to_end(tmp_path):
    out = tmp_path / "rep"
    r = run_cli("reproduce", "phy-mac", "--quick", "-o", str(out), "-j", "2", "-q", timeout=600)
    assert r.returncode == 0, r.stderr
    claims = json.loads((out / "claims.json").read_text())["claims"]
    assert [c["claim"] for c in claims] == ["PM1", "PM2", "PM3", "PM4", "PM5"]
    failing = [c for c in claims if not c["holds"]]
    assert not failing, failing
    html = (out / "report.html").read_text()
    assert len(re.findall(r"<img ", html)) == 3
    assert html.count("holds") >= 5
    pngs = sorted((out / "phy-mac" / "figures").glob("*.png"))
    assert len(pngs) == 3 and all(p.stat().st_size > 5000 for p in pngs)
    # Every sweep keeps its files; a second run finds everything cached and writes the same claims.
    assert (out / "phy-mac" / "closed-form" / "summary.parquet").exists()
    before = (out / "claims.json").read_text()
    r2 = run_cli("reproduce", "phy-mac", "--quick", "-o", str(out), "-q", timeout=600)
    assert r2.returncode == 0, r2.stderr
    assert (out / "claims.json").read_text() == before


def test_tcp_baselines_quick_reports_every_claim(tmp_path):
    out = tmp_path / "tcp"
    r = run_cli("reproduce", "tcp-baselines", "--quick", "-o", str(out), "-q", timeout=600)
    assert r.returncode == 0, r.stderr
    claims = {c["claim"]: c for c in json.loads((out / "claims.json").read_text())["claims"]}
    assert set(claims) == {"T1", "T2", "W6", "V4", "T3", "T4", "T5"}
    # The behaviours the transport model must have.
    for cid in ("T2", "W6", "T4", "T5"):
        assert claims[cid]["holds"], claims[cid]
    # A claim that does not hold always says why.
    for c in claims.values():
        assert c["ours"] and (c["holds"] or c["explanation"]), c
    assert len(re.findall(r"<img ", (out / "report.html").read_text())) == 3


def test_queues_quick_holds(tmp_path):
    out = tmp_path / "q"
    r = run_cli("reproduce", "queues", "--quick", "-o", str(out), "-q", timeout=600)
    assert r.returncode == 0, r.stderr
    claims = {c["claim"]: c for c in json.loads((out / "claims.json").read_text())["claims"]}
    assert set(claims) == {"Q1", "Q2", "Q3", "Q4"}
    for c in claims.values():
        assert c["holds"], c
    # ping bars, AQL bars, rate anomaly, latency CDFs per discipline
    assert len(re.findall(r"<img ", (out / "report.html").read_text())) == 4


def test_wqm_quick_reports_every_claim(tmp_path):
    out = tmp_path / "w"
    r = run_cli("reproduce", "wqm", "--quick", "-o", str(out), "-q", "-j", "2", timeout=600)
    assert r.returncode == 0, r.stderr
    claims = {c["claim"]: c for c in json.loads((out / "claims.json").read_text())["claims"]}
    assert set(claims) == {"W1", "W2", "W3", "W4", "W5", "W6", "W7", "W1c", "W+"}
    # The model must show bufferbloat, and WQM must cut single-flow and parking-lot latency.
    for cid in ("W1", "W5", "W6"):
        assert claims[cid]["holds"], claims[cid]
    for c in claims.values():
        assert c["ours"] and (c["holds"] or c["explanation"]), c
    assert len(re.findall(r"<img ", (out / "report.html").read_text())) == 9


def test_bquic_quick_reports_every_claim(tmp_path):
    out = tmp_path / "b"
    r = run_cli("reproduce", "bquic", "--quick", "-o", str(out), "-q", "-j", "2", timeout=600)
    assert r.returncode == 0, r.stderr
    claims = {c["claim"]: c for c in json.loads((out / "claims.json").read_text())["claims"]}
    assert set(claims) == {"B1", "B2", "B3", "B4", "B5", "B6", "B+"}
    # Pacing off must show in the inter-packet times.
    assert claims["B4"]["holds"], claims["B4"]
    for c in claims.values():
        assert c["ours"] and (c["holds"] or c["explanation"]), c
    assert len(re.findall(r"<img ", (out / "report.html").read_text())) == 4


def test_cwnd_history_quick_reports_every_claim(tmp_path):
    out = tmp_path / "h"
    r = run_cli("reproduce", "cwnd-history", "--quick", "-o", str(out), "-q", "-j", "2", timeout=600)
    assert r.returncode == 0, r.stderr
    claims = {c["claim"]: c for c in json.loads((out / "claims.json").read_text())["claims"]}
    assert set(claims) == {"H1", "H2", "H3", "H4", "H5", "H6", "H7", "H+", "HS"}
    # The bad path leaves the default in charge; a background flow does not cancel the gain on
    # the good path; the safety analysis is evaluated.
    for cid in ("H3", "H6", "HS"):
        assert claims[cid]["holds"], claims[cid]
    for c in claims.values():
        assert c["ours"] and "nan" not in c["ours"] and (c["holds"] or c["explanation"]), c
    # The history is raised on the good path, reverted by the guard when a TCP flow appears.
    assert claims["H1"]["detail"]["good"]["iw_bytes"] > 13_500
    assert claims["HS"]["detail"]["tcp"]["rtt"]["iw_bytes"] == 13_500
    assert len(re.findall(r"<img ", (out / "report.html").read_text())) == 5


def test_vwire_quick_reports_every_claim(tmp_path):
    out = tmp_path / "v"
    r = run_cli("reproduce", "vwire", "--quick", "-o", str(out), "-q", "-j", "2", timeout=600)
    assert r.returncode == 0, r.stderr
    claims = {c["claim"]: c for c in json.loads((out / "claims.json").read_text())["claims"]}
    assert set(claims) == {"V1", "V2", "V3", "V4", "VX1", "VX2"}
    for c in claims.values():
        assert c["ours"] and "nan" not in c["ours"] and (c["holds"] or c["explanation"]), c
    # The classifier is evaluated on the held-out fixture; vwire beats the FIFO AP on V1.
    assert claims["VX2"]["holds"], claims["VX2"]
    assert claims["V1"]["detail"]["vwire"] > claims["V1"]["detail"]["e2e"], claims["V1"]
    assert len(re.findall(r"<img ", (out / "report.html").read_text())) == 3


def test_aggctl_quick_reports_every_claim(tmp_path):
    out = tmp_path / "a"
    r = run_cli("reproduce", "aggctl", "--quick", "-o", str(out), "-q", "-j", "2", timeout=600)
    assert r.returncode == 0, r.stderr
    claims = {c["claim"]: c for c in json.loads((out / "claims.json").read_text())["claims"]}
    assert set(claims) == {"A1", "A2", "A3", "A4", "A5", "A6", "A7", "A+1", "A+2"}
    # The loop must hold N_e = 32 without loss and track the closed form.
    for cid in ("A2", "A4"):
        assert claims[cid]["holds"], claims[cid]
    # A claim that does not hold always says why.
    for c in claims.values():
        assert c["ours"] and (c["holds"] or c["explanation"]), c
        assert "could not be evaluated" not in c["explanation"], c
    assert len(re.findall(r"<img ", (out / "report.html").read_text())) == 8
