"""`lasthop reproduce aggctl` end to end (quick, one seed)."""
from __future__ import annotations

import json
import re

from helpers import run_cli


def test_aggctl_quick_reports_every_claim(tmp_path):
    out = tmp_path / "a"
    r = run_cli("reproduce", "aggctl", "--quick", "--seeds", "1", "-o", str(out), "-q", "-j", "2", timeout=600)
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "claims.json").read_text())
    claims = {c["claim"]: c for c in doc["claims"]}
    assert set(claims) == {"A1", "A2", "A3", "A4", "A5", "A6", "A7", "A+1", "A+2", "A+3"}
    # The loop must hold N_e = 32 without loss, track the closed form and Fig. 7's receivers,
    # and aggregation must rise with the send rate up to 64 (Fig. 3).
    for cid in ("A1", "A2", "A3", "A4"):
        assert claims[cid]["point_verdict"] == "holds", claims[cid]
    # A4's closed form is exact: decided even from one seed.
    assert claims["A4"]["checks"][0]["status"] == "in", claims["A4"]
    # Fig. 9: with K = 1 (Mb/s per packet per update) the A-MPDUs stay at 64 longer than the
    # paper's 2.24 s, as its own arithmetic says they must.
    assert claims["A6"]["detail"]["updates_needed"] >= 5, claims["A6"]
    assert claims["A6"]["checks"][0]["mean"] > 2.74, claims["A6"]
    # Fig. 10's testbed: its senders as the Debian Jessie sender ran them (a bulk writer behind
    # Linux's 4 MiB socket send buffer; BBR without Linux 5.1's ACK-aggregation estimator), its
    # Broadcom AP and clients each opening an A-MPDU with an RTS/CTS (their drivers' default):
    # aggctl's delay is below 1/20 of both TCPs' from their application's write, and its rate
    # between theirs.
    a7 = {c["label"]: c for c in claims["A7"]["checks"]}
    for label in ("aggctl delay / CUBIC's", "aggctl delay / BBR's", "aggctl rate / CUBIC's", "aggctl rate / BBR's"):
        assert a7[label]["point_in_band"], claims["A7"]
    # The rates compared are the application's payload: aggctl's UDP payload (1472 octets of each
    # 1500-octet packet, which its goodput counts), TCP's payload.
    runs = [json.loads(p.read_text()) for p in (out / "aggctl" / "cmp-aggctl").glob("runs/*.json")]
    ip = sum(d["data"]["flows"][0]["goodput_bps"] for d in runs) / len(runs) / 1e6
    assert abs(claims["A7"]["detail"]["cmp"]["aggctl"][0] - ip * 1472 / 1500) < 1e-9, claims["A7"]["detail"]
    # Rows beyond the paper are reported, never counted.
    for cid in ("A+1", "A+2", "A+3"):
        assert claims[cid]["verdict"] == "reported", claims[cid]
    assert doc["tally"]["suites"]["aggctl"]["reported"] == 3
    for c in claims.values():
        assert c["ours"] and "could not be evaluated" not in c["explanation"], c
        assert c["verdict"] != "misses" or (c["explanation"] and c["miss_class"] != "unclassified"), c
    assert len(re.findall(r"<img ", (out / "report.html").read_text())) == 8


def _a7_runs(tmp_path, rts: str | None):
    """Fig. 10's three testbed runs (quick length, three seeds); `rts` replaces the AP's and the
    client's RTS policy when given."""
    from lasthop.reproduce.aggctl import _check_a7
    from lasthop.reproduce.aggctl.setup import sweeps
    from lasthop.reproduce.framework import SuiteRun
    from lasthop.sweeps import Sweep, run_sweep

    results = {}
    for sd in sweeps(True):
        if not sd.name.startswith("cmp-"):
            continue
        base, vary, _ = sd.resolve(True, None)
        if rts is not None:
            base["ap"]["rts"] = rts
            base["stations"][0]["rts"] = rts
        results[sd.name] = run_sweep(Sweep(base=base, vary=vary, seeds=3), tmp_path / f"{rts}-{sd.name}",
                                     jobs=2, progress=False)
    return _check_a7(SuiteRun(results, True))


def test_a7_holds_on_the_testbeds_broadcom_radios_and_not_without_their_rts(tmp_path):
    # The testbed's AP (Asus RT-AC86U, Asuswrt's wl_ampdu_rts = 1) and its BCM4360 clients
    # (Broadcom's wl, ampdu_rts at attach) protect every A-MPDU: aggctl's 32-MPDU aggregates
    # pay the RTS/CTS twice as often per byte as CUBIC's 64, and its rate falls below CUBIC's
    # as in Fig. 10 (80 %); without the RTS both reach the link's capacity alike.
    # Three seeds of the quick length leave BBR's rate within about ±5 %, so aggctl's rate over
    # BBR's (1.04 on payload) is asserted on its mean; the other checks are decided.
    held = _a7_runs(tmp_path, None)
    assert all(c.status() == "in" for c in held.checks if c.label != "aggctl rate / BBR's"), \
        [(c.label, c.values) for c in held.checks]
    assert all(c.point_in_band() for c in held.checks), [(c.label, c.values) for c in held.checks]
    bare = _a7_runs(tmp_path, "off")
    rate = {c.label: c for c in bare.checks}["aggctl rate / CUBIC's"]
    held_rate = {c.label: c for c in held.checks}["aggctl rate / CUBIC's"]
    assert min(rate.values) > max(held_rate.values), (rate.values, held_rate.values)
