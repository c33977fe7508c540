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
    # The model agrees with its closed forms: every mean inside its band, and no CI outside it.
    failing = [c for c in claims if c["point_verdict"] != "holds" or c["verdict"] == "misses"]
    assert not failing, failing
    assert all(len(c["checks"]) >= 2 and all(k["n"] >= 3 for k in c["checks"]) for c in claims), claims
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
