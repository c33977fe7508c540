"""`lasthop reproduce cwnd-history` end to end (quick)."""
from __future__ import annotations

import json
import re

from helpers import run_cli

from lasthop.reproduce.cwnd_history import DEFAULT_IW
from lasthop.reproduce.framework import MISS_CLASSES


def test_cwnd_history_quick_reports_every_claim(tmp_path):
    out = tmp_path / "h"
    r = run_cli("reproduce", "cwnd-history", "--quick", "-o", str(out), "-q", "-j", "2", timeout=600)
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "claims.json").read_text())
    claims = {c["claim"]: c for c in doc["claims"]}
    assert set(claims) == {"H1", "H2", "H3", "H4", "H5", "H6", "H7", "H+", "HS"}
    # Rows beyond the paper are reported, never counted as holds.
    for cid in ("H+", "HS"):
        assert claims[cid]["verdict"] == "reported" and not claims[cid]["checks"], claims[cid]
    t = doc["tally"]["suites"]["cwnd-history"]
    assert (t["falsifiable"], t["reported"]) == (7, 2)
    for c in claims.values():
        assert c["ours"] and "nan" not in c["ours"], c
        if c["verdict"] == "misses":
            assert c["miss_class"] in MISS_CLASSES and c["explanation"], c
        if c["verdict"] != "reported":
            assert c["checks"] and all(k["n"] >= 2 for k in c["checks"]), c
    # proto-quic's 32-packet default; the history is raised on the good path, and it shortens
    # the 1 MB transfer with every number of background flows.
    assert DEFAULT_IW == 32 * 1350
    assert claims["H1"]["detail"]["good"]["iw_bytes"] > DEFAULT_IW
    assert all(v < 0 for v in claims["H6"]["detail"].values()), claims["H6"]
    # On the bad path a 10 MB transfer never ends above the default window: history changes nothing.
    for cell in ("simple-10MB", "dumbbell-10MB"):
        assert claims["H3"]["detail"][cell]["raised"] == 0 and claims["H3"]["detail"][cell]["change"] == 0
    # The RTT guard reverts the history window when a TCP flow has appeared.
    assert claims["HS"]["detail"]["tcp"]["rtt"]["iw_bytes"] == DEFAULT_IW
    assert len(re.findall(r"<img ", (out / "report.html").read_text())) == 5
    # Algorithm 1's observations: at every connection's close and at its complete client hello
    # (the 1-RTT handshake's second one, `history_events = "close_every_hello"`), 3 connections
    # in quick mode.
    for f in sorted((out / "cwnd-history" / "simple-good-1MB" / "runs").glob("*.json")):
        d = json.loads(f.read_text())
        h = d["data"]["flows"][0]["quic"].get("history")
        if d["spec"]["flows"][0]["history"] == "mean":
            assert (h["records_close"], h["records_full_handshake"], h["samples"]) == (3, 3, 6), h
