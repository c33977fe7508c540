"""The scoreboard's verdict rules (`lasthop.reproduce.framework`): a value just outside its band
misses whatever the rounding, a CI that straddles an edge is inconclusive, a reported row never
counts as holding, and the tally counts falsifiable rows only."""
from __future__ import annotations

import math

from lasthop.reproduce.framework import (MISS_CLASSES, Check, Claim, ClaimResult, SuiteReport, evaluate, tally,
                                         tally_line, verdict_cell, verdict_of)


def _claim(checks, reported=False, miss_class="model gap"):
    return Claim("X1", "x", "p", "b", lambda run: ClaimResult("ours", checks, "because"), miss_class,
                 reported=reported)


def test_a_value_just_outside_the_band_misses_whatever_the_rounding():
    # 15.2 % against "within 15 %": an exact quantity printed to 3 digits would round into it.
    c = Check("airtime off equal", [0.15004], hi=0.15, unit="%", scale=100, exact=True)
    assert c.status() == "out"
    res = evaluate(_claim([c]), None)
    assert res.verdict == "misses" and not res.holds and res.miss_class == "model gap"
    # The printed figure sits on the same side of the edge as the value.
    shown = float(res.checks_text.split(": ")[1].split("%")[0])
    assert shown > 15.0, res.checks_text
    # Over seeds: tight values just below a lower edge.
    c2 = Check("gain", [0.0999, 0.09991, 0.09989, 0.0999], lo=0.1)
    assert c2.status() == "out" and verdict_of([c2])[0] == "misses"
    assert "0.0999" in c2.text() and "[≥ 0.1]" in c2.text()


def test_a_value_just_inside_holds_only_when_its_ci_is_inside():
    assert Check("x", [1.0000001], lo=1.0, exact=True).status() == "in"
    tight = Check("x", [2.0, 2.001, 1.999, 2.0], lo=1.0, hi=3.0)
    assert tight.status() == "in" and verdict_of([tight]) == ("holds", None)


def test_a_ci_that_straddles_the_edge_is_inconclusive_and_says_how_many_seeds():
    c = Check("ratio", [3.6, 4.6, 4.1, 4.5], lo=4.0)  # mean 4.2, CI ≈ ±0.7
    assert c.status() == "straddle"
    verdict, seeds = verdict_of([c])
    assert verdict == "inconclusive" and seeds is not None and seeds > c.n
    m, h = c.mean, c.half
    assert m - h < 4.0 < m + h
    # n·(h/d)² seeds would put the CI above the edge if mean and spread stay.
    assert seeds == max(c.n + 1, math.ceil(c.n * (h / (m - 4.0)) ** 2))
    assert "inconclusive" in verdict_cell(evaluate(_claim([c]), None))


def test_a_mean_on_the_edge_is_not_decided_by_more_seeds():
    c = Check("x", [0.9, 1.1, 1.0003, 0.9997], lo=1.0)  # mean 1.00000, CI ±0.13
    assert c.status() == "straddle" and c.seeds_to_decide() is None
    res = evaluate(_claim([c]), None)
    assert res.verdict == "inconclusive" and "edge" in verdict_cell(res)


def test_one_seed_has_no_spread_so_it_cannot_decide():
    c = Check("x", [10.0], lo=1.0)
    assert c.status() == "straddle" and c.point_in_band()
    res = evaluate(_claim([c]), None)
    assert res.verdict == "inconclusive" and res.point_verdict == "holds" and res.seeds_to_decide is None
    assert "(1 seed)" in res.checks_text


def test_one_check_out_makes_the_claim_miss_even_beside_an_inconclusive_one():
    out = Check("a", [1.0, 1.01, 0.99], hi=0.5)
    unsure = Check("b", [5.0], lo=1.0)
    assert verdict_of([out, unsure])[0] == "misses"
    assert verdict_of([unsure, Check("c", [2.0, 2.0], lo=1.0)])[0] == "inconclusive"


def test_nan_values_are_left_out_and_no_values_is_inconclusive():
    c = Check("x", [float("nan"), None], lo=0.0)
    assert c.n == 0 and c.status() == "straddle" and "no value" in c.text()
    assert verdict_of([])[0] == "inconclusive"


def test_a_reported_row_never_counts_as_holding():
    res = evaluate(_claim([Check("x", [1.0, 1.0, 1.0], lo=0.0)], reported=True), None)
    assert res.verdict == "reported" and not res.holds
    good = evaluate(_claim([Check("x", [1.0, 1.0], lo=0.0)]), None)
    bad = evaluate(_claim([Check("x", [1.0, 1.0], lo=5.0)], miss_class="setup differs"), None)
    rep = SuiteReport("s", "S", "src", "d", False,
                      [(_claim([]), good), (_claim([]), bad), (_claim([], reported=True), res)], [], {})
    t = tally([rep])["total"]
    assert (t["falsifiable"], t["holds"], t["misses"], t["reported"]) == (2, 1, 1, 1)
    assert t["miss_classes"]["setup differs"] == 1
    assert tally_line(t).startswith("1/2 falsifiable claims hold")


def test_a_miss_without_a_declared_class_is_counted_unclassified():
    res = evaluate(_claim([Check("x", [1.0, 1.0], lo=5.0)], miss_class=None), None)
    assert res.verdict == "misses" and res.miss_class == "unclassified"


def test_a_check_that_raises_is_inconclusive_not_a_hold():
    def boom(run):
        raise KeyError("sweep")
    res = evaluate(Claim("X", "x", "p", "b", boom, "model gap"), None)
    assert res.verdict == "inconclusive" and "could not be evaluated" in res.explanation


def test_every_falsifiable_claim_of_every_suite_declares_a_miss_class():
    from lasthop.reproduce import load, names

    for n in names():
        for c in load(n).claims():
            if not c.reported:
                assert c.miss_class in MISS_CLASSES, (n, c.id, c.miss_class)
