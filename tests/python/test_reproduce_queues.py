"""`lasthop reproduce queues` end to end (quick)."""
from __future__ import annotations

import json
import re

from helpers import run_cli


def test_queues_quick_holds(tmp_path):
    out = tmp_path / "q"
    r = run_cli("reproduce", "queues", "--quick", "-o", str(out), "-q", timeout=600)
    assert r.returncode == 0, r.stderr
    claims = {c["claim"]: c for c in json.loads((out / "claims.json").read_text())["claims"]}
    assert set(claims) == {"Q1", "Q2", "Q3", "Q4"}
    # Every discipline and the airtime scheduler behave as specified: each tested mean inside its
    # band, no CI outside it, and every claim checked per seed.
    for c in claims.values():
        assert c["point_verdict"] == "holds" and c["verdict"] != "misses", c
        assert c["checks"] and all(k["n"] >= 3 for k in c["checks"]), c
    # ping bars, AQL bars, rate anomaly, latency CDFs per discipline
    assert len(re.findall(r"<img ", (out / "report.html").read_text())) == 4
