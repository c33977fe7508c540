"""`lasthop reproduce vwire` end to end (quick, one seed)."""
from __future__ import annotations

import json
import re

from helpers import run_cli


def test_vwire_quick_reports_every_claim(tmp_path):
    out = tmp_path / "v"
    r = run_cli("reproduce", "vwire", "--quick", "--seeds", "2", "-o", str(out), "-q", "-j", "2", timeout=600)
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "claims.json").read_text())
    claims = {c["claim"]: c for c in doc["claims"]}
    assert set(claims) == {"V1", "V2", "V3", "V4", "VX1", "VX2"}
    for c in claims.values():
        assert c["ours"] and "nan" not in c["ours"] and "could not be evaluated" not in c["explanation"], c
        assert c["verdict"] != "misses" or (c["explanation"] and c["miss_class"] != "unclassified"), c
    # The classifier is evaluated on the held-out fixture (exact, decided from one seed), and
    # the row says that the suite's own video is not classified as one.
    assert claims["VX2"]["verdict"] == "holds", claims["VX2"]
    assert "bulk" in claims["VX2"]["ours"], claims["VX2"]
    # vwire beats the FIFO AP on V1; the split holds its rate under wire loss where CUBIC falls.
    assert claims["V1"]["detail"]["vwire"] > claims["V1"]["detail"]["e2e"], claims["V1"]
    # Where the video misses a bin, the scheduler mostly served the greedy flow no more than its
    # allocation in force (no excess); a faster feedback period (the lag ablation) misses fewer,
    # on the mean of the two seeds (one seed alone can go either way by a bin: full mode, seeds
    # 1-5, 88/90/95/93/93 % against 90/83/88/87/88 %).
    m = claims["V1"]["detail"]["missed_bins"]
    assert m["missed"] > 0 and m["greedy_within"] >= m["missed"] / 2, m
    assert claims["V1"]["detail"]["fast_ablation"] >= claims["V1"]["detail"]["vwire"], claims["V1"]["detail"]
    assert claims["VX1"]["point_verdict"] == "holds", claims["VX1"]
    v3 = {c["label"]: c for c in claims["V3"]["checks"]}
    assert all(v["point_in_band"] for k, v in v3.items() if "CUBIC at" in k or "BBR at" in k), v3
    # V4 on the paper's own BBR runs (V3's setup, no wire loss, estimator off): at both distances
    # BBR exceeds B·r/R (its cwnd gain of 2) while staying below the link's B.
    v4 = claims["V4"]
    assert v4["point_verdict"] == "misses" and "cwnd_gain" in v4["explanation"], v4
    assert [c["label"] for c in v4["checks"]] == ["3 ft: goodput / (B·r/R)", "75 ft: goodput / (B·r/R)"], v4
    assert all(c["mean"] > 1.25 for c in v4["checks"]), v4
    assert all(x["goodput_bps"] < x["B_bps"] for x in v4["detail"].values()), v4["detail"]
    assert len(re.findall(r"<img ", (out / "report.html").read_text())) == 3
