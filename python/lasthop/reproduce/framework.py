"""The reproduction framework: suites of sweeps, figures and claims, and the report that puts
our numbers next to the published ones.

A suite is a module in this package exposing:

    NAME: str           # command-line name, e.g. "phy-mac"
    TITLE: str          # human title
    SOURCE: str         # the paper (title, venue) or "model validation"
    DESCRIPTION: str    # one paragraph: the setup and what is compared
    def sweeps(quick: bool) -> list[SweepDef]
    def claims() -> list[Claim]
    def figures(run: SuiteRun) -> list[Figure]

`run_suite` runs the sweeps (cached and resumable, through `lasthop.sweeps`), evaluates every
claim from the sweep files only, draws the figures and returns a `SuiteReport`; `write_report`
renders one or more of them as a self-contained HTML page plus a machine-readable
`claims.json`.
"""
from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator



@dataclass(frozen=True)
class SweepDef:
    """One sweep of a suite. `base` has the TOML structure of a spec; `quick` is a partial spec
    deep-merged into `base` under `--quick`, and `quick_vary` replaces `vary` there."""

    name: str
    base: dict
    vary: list[tuple[str, list]]
    seeds: int
    quick_seeds: int
    quick: dict | None = None
    quick_vary: list[tuple[str, list]] | None = None

    def resolve(self, quick: bool, seeds: int | None = None) -> tuple[dict, list[tuple[str, list]], int]:
        """(base, vary, seeds) of this sweep; `seeds`, if given, replaces the declared count."""
        base = copy.deepcopy(self.base)
        if quick and self.quick:
            _merge(base, self.quick)
        vary = self.quick_vary if (quick and self.quick_vary is not None) else self.vary
        return base, vary, seeds if seeds is not None else (self.quick_seeds if quick else self.seeds)


def _merge(dst: dict, src: dict) -> None:
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            _merge(dst[k], v)
        else:
            dst[k] = copy.deepcopy(v)



VERDICTS = ("holds", "misses", "inconclusive", "reported")
"""A claim's verdict: *holds* (the 95 % CI over seeds lies inside the band), *misses* (it lies
outside), *inconclusive* (it straddles an edge of the band, or one seed gives no spread) and
*reported* (a row without a falsifiable band, counted apart)."""

MISS_CLASSES = ("setup differs", "model gap", "disagrees with the paper")
"""Why a claim misses: *setup differs* (the run cannot be set up as the paper's, and why),
*model gap* (a part of the model that is missing, and what it needs), *disagrees with the paper*
(a measurement, re-runnable, shows the published figure cannot follow from the paper's own
setup)."""


MAX_SEEDS_TO_DECIDE = 1000


@dataclass
class Check:
    """One falsifiable comparison: a quantity measured once per seed against the band
    `lo ≤ x ≤ hi` (either edge may be open). The verdict and the text shown for it come from
    the same numbers: the mean and the 95 % Student-t CI half-width of `values`.

    `exact` marks a value that does not vary with the seed (a closed form, a model input): its
    CI is zero. Otherwise one value alone has no known spread, so it cannot decide the band.
    `scale` multiplies values for display only (100 for a fraction shown in %)."""

    label: str
    values: list[float]
    lo: float | None = None
    hi: float | None = None
    unit: str = ""
    scale: float = 1.0
    exact: bool = False

    def __post_init__(self) -> None:
        self.values = [float(v) for v in self.values if v is not None and math.isfinite(float(v))]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return math.fsum(self.values) / self.n if self.values else math.nan

    @property
    def half(self) -> float:
        """95 % CI half-width (Student t over seeds); 0 when exact, infinite from one seed."""
        if self.exact:
            return 0.0
        if self.n < 2:
            return math.inf
        from ..analysis import t_quantile

        m = self.mean
        var = math.fsum((x - m) ** 2 for x in self.values) / (self.n - 1)
        return t_quantile(0.975, self.n - 1) * math.sqrt(var) / math.sqrt(self.n)

    def status(self) -> str:
        """"in", "out" or "straddle" (also when there is no value)."""
        if not self.values:
            return "straddle"
        m, h = self.mean, self.half
        if (self.lo is not None and m + h < self.lo) or (self.hi is not None and m - h > self.hi):
            return "out"
        if (self.lo is None or m - h >= self.lo) and (self.hi is None or m + h <= self.hi):
            return "in"
        return "straddle"

    def point_in_band(self) -> bool:
        m = self.mean
        return bool(self.values) and (self.lo is None or m >= self.lo) and (self.hi is None or m <= self.hi)

    def seeds_to_decide(self) -> int | None:
        """For a straddling check: about how many seeds would put the CI on one side of the
        edge it crosses, if the mean and spread stay (n·(h/d)²); None when unknowable (one
        seed, or the mean on the edge)."""
        if self.status() != "straddle" or self.n < 2:
            return None
        m, h = self.mean, self.half
        edges = [e for e in (self.lo, self.hi) if e is not None and m - h < e < m + h]
        d = min(abs(m - e) for e in edges) if edges else 0.0
        if d <= 0:
            return None
        need = max(self.n + 1, math.ceil(self.n * (h / d) ** 2))
        # Beyond this the mean sits on the edge: more seeds alone will not decide it.
        return need if need <= MAX_SEEDS_TO_DECIDE else None

    def band_text(self) -> str:
        u = self.unit

        def e(x: float) -> str:
            return f"{x * self.scale:.6g}"
        if self.lo is not None and self.hi is not None:
            return f"{e(self.lo)} … {e(self.hi)}{u}"
        if self.lo is not None:
            return f"≥ {e(self.lo)}{u}"
        if self.hi is not None:
            return f"≤ {e(self.hi)}{u}"
        return "any"

    def _fmt(self, x: float, digits: int = 3) -> str:
        """`x` (times `scale`) to `digits` significant digits, without an exponent for the
        magnitudes measurements have."""
        v = x * self.scale
        if v == 0 or not math.isfinite(v):
            return f"{v:g}"
        mag = math.floor(math.log10(abs(v)))
        if -4 <= mag < 9:
            return f"{v:.{max(0, digits - 1 - mag)}f}"
        return f"{v:.{digits - 1}e}"

    def text(self) -> str:
        """`label mean ± h unit [band]`, the mean printed with as many digits as it takes for
        the printed figure to sit on the same side of every edge as the value itself."""
        if not self.values:
            return f"{self.label}: no value [{self.band_text()}]"
        m = self.mean
        digits = 3
        while digits < 12 and not self._printed_agrees(m, digits):
            digits += 1
        s = f"{self.label}: {self._fmt(m, digits)}{self.unit}"
        if not self.exact:
            s += f" ± {self._fmt(self.half)}{self.unit} (n={self.n})" if self.n >= 2 else " (1 seed)"
        return s + f" [{self.band_text()}]"

    def _printed_agrees(self, m: float, digits: int) -> bool:
        shown = float(self._fmt(m, digits)) / self.scale if self.scale else m
        for e in (self.lo, self.hi):
            if e is None:
                continue
            if (m < e) != (shown < e) or (m > e) != (shown > e):
                return False
        return True


@dataclass
class ClaimResult:
    """What a claim's check returns. `value` is the context shown as "ours" (what was measured,
    in the terms of the claim); `checks` decide the verdict (none for a *reported* claim);
    `explanation` is the sentence of evidence shown with a miss (or any other note);
    `miss_class` overrides the claim's declared class for this miss."""

    value: str
    checks: list[Check] = field(default_factory=list)
    explanation: str = ""
    detail: dict = field(default_factory=dict)
    miss_class: str | None = None
    # Filled in by `evaluate`.
    verdict: str = ""
    seeds_to_decide: int | None = None
    checks_text: str = ""
    point_verdict: str = ""  # the verdict if every mean were exact (no CI): "holds" or "misses"

    @property
    def holds(self) -> bool:
        return self.verdict == "holds"


@dataclass(frozen=True)
class Claim:
    """A row of the scoreboard. `band` says in words what `checks` test; `reported` rows have
    no falsifiable band (their figures are shown, never counted as holding). `miss_class` is
    the class of a miss (one of MISS_CLASSES) and `source` says where the band comes from and
    why it is wider than the paper's figure, if it is."""

    id: str
    text: str
    published: str
    band: str
    check: Callable[["SuiteRun"], ClaimResult]
    miss_class: str | None = None
    source: str = ""
    reported: bool = False


def evaluate(claim: Claim, run: "SuiteRun") -> ClaimResult:
    """Run a claim's check and derive its verdict from the checks it returns."""
    try:
        res = claim.check(run)
    except Exception as e:  # a claim that cannot be evaluated is reported, not fatal
        res = ClaimResult("—", explanation=f"could not be evaluated: {type(e).__name__}: {e}")
        res.verdict = "inconclusive" if not claim.reported else "reported"
        return res
    res.checks_text = "; ".join(c.text() for c in res.checks)
    if claim.reported:
        res.verdict = "reported"
        return res
    verdict, seeds = verdict_of(res.checks)
    res.verdict, res.seeds_to_decide = verdict, seeds
    res.point_verdict = "holds" if res.checks and all(c.point_in_band() for c in res.checks) else "misses"
    if verdict == "misses" and res.miss_class is None:
        res.miss_class = claim.miss_class or "unclassified"
    if verdict != "misses":
        res.miss_class = None
    return res


def verdict_of(checks: list[Check]) -> tuple[str, int | None]:
    """(verdict, seeds that would decide it): misses if any check's CI lies outside its band,
    holds if every CI lies inside, inconclusive otherwise (and without checks)."""
    if not checks:
        return "inconclusive", None
    st = [c.status() for c in checks]
    if "out" in st:
        return "misses", None
    if all(s == "in" for s in st):
        return "holds", None
    need = [c.seeds_to_decide() for c in checks if c.status() == "straddle"]
    return "inconclusive", (None if any(x is None for x in need) else max(need))


def undecided_reason(checks: list[Check]) -> str:
    """Why an inconclusive claim is undecided, in words."""
    open_checks = [c for c in checks if c.status() == "straddle"]
    if not checks:
        return "nothing to test"
    if any(c.n == 0 for c in open_checks):
        return "no value"
    if any(c.n == 1 and not c.exact for c in open_checks):
        return "one seed: spread unknown"
    if any(c.seeds_to_decide() is None for c in open_checks):
        return "the mean sits on the band's edge: more seeds alone will not decide it"
    return "more seeds"


def tally(reports: list["SuiteReport"]) -> dict:
    """Counts over the falsifiable rows (holds, misses by class, inconclusive) and the
    reported rows, per suite and in total."""
    def count(items):
        c = {"falsifiable": 0, "holds": 0, "misses": 0, "inconclusive": 0, "reported": 0,
             "miss_classes": {k: 0 for k in MISS_CLASSES + ("unclassified",)}}
        for _, res in items:
            if res.verdict == "reported":
                c["reported"] += 1
                continue
            c["falsifiable"] += 1
            c[res.verdict] += 1
            if res.verdict == "misses":
                c["miss_classes"][res.miss_class or "unclassified"] += 1
        if not c["miss_classes"]["unclassified"]:
            del c["miss_classes"]["unclassified"]
        return c
    out = {"suites": {r.name: count(r.claims) for r in reports}}
    out["total"] = count([x for r in reports for x in r.claims])
    return out


def tally_line(c: dict) -> str:
    f = c["falsifiable"]
    pct = f" ({c['holds'] / f * 100:.0f} %)" if f else ""
    classes = ", ".join(f"{k} {v}" for k, v in c["miss_classes"].items() if v)
    return (f"{c['holds']}/{f} falsifiable claims hold{pct}; {c['misses']} miss"
            + (f" ({classes})" if classes else "") + f"; {c['inconclusive']} inconclusive; "
            f"{c['reported']} reported without a band")


@dataclass
class Figure:
    title: str
    caption: str
    fig: Any  # a matplotlib Figure


class SuiteRun:
    """The sweep results of one suite, with helpers to aggregate them across seeds."""

    def __init__(self, results: dict[str, Any], quick: bool):
        self.results = results
        self.quick = quick

    def rows(self, sweep: str) -> list[dict]:
        return self.results[sweep].summary.to_pylist()

    def docs(self, sweep: str, where: Callable[[dict], bool] | None = None) -> Iterator[tuple[dict, dict]]:
        """(overrides, result document) of every run of `sweep` in manifest order, those whose
        overrides pass `where` if given."""
        res = self.results[sweep]
        for r in res.runs:
            if where is None or where(r["overrides"]):
                yield r["overrides"], res.load(r["point"], r["seed"])

    def seeded(self, sweep: str, where: Callable[[dict], bool] | None = None) -> Iterator[tuple[dict, int, dict]]:
        """(overrides, seed, result document) of every run of `sweep` in manifest order."""
        res = self.results[sweep]
        for r in res.runs:
            if where is None or where(r["overrides"]):
                yield r["overrides"], r["seed"], res.load(r["point"], r["seed"])

    def per_seed(self, sweep: str, fn: Callable[[dict], float],
                 where: Callable[[dict], bool] | None = None) -> dict[int, float]:
        """`fn(document)` per seed over the runs of `sweep` that pass `where` (which should
        select one point of the sweep; a second run of a seed would overwrite the first)."""
        out: dict[int, float] = {}
        for _, seed, doc in self.seeded(sweep, where):
            out[seed] = float(fn(doc))
        return out

    def point_values(self, sweep: str, metric: str, keys: Iterable[str], flows: str = "sum",
                     where: Callable[[dict], bool] | None = None) -> dict[tuple, dict[int, float]]:
        """Per value of `keys`, `metric` per seed (see `by_point` for `flows`)."""
        keys = list(keys)
        per_run: dict[tuple, dict[int, list[float]]] = {}
        for r in self.rows(sweep):
            if where is not None and not where(r):
                continue
            k = tuple(r[key] for key in keys)
            per_run.setdefault(k, {}).setdefault(r["seed"], []).append(r[metric])
        out: dict[tuple, dict[int, float]] = {}
        for k, seeds in per_run.items():
            vals = {}
            for seed, xs in sorted(seeds.items()):
                if flows == "sum":
                    vals[seed] = float(sum(xs))
                elif flows == "mean":
                    vals[seed] = float(sum(xs)) / len(xs)
                else:
                    vals[seed] = float(xs[0])
            out[k] = vals
        return out

    def by_point(self, sweep: str, metric: str, keys: Iterable[str], flows: str = "sum",
                 where: Callable[[dict], bool] | None = None) -> dict[tuple, tuple[float, float, int]]:
        """Mean, 95 % CI half-width and n across seeds of `metric` per value of `keys`.
        `flows="sum"` adds the metric over the flows of a run first (e.g. total goodput);
        `flows="mean"` averages it; `flows="first"` takes flow 0."""
        from ..analysis import mean_ci

        out = {}
        for k, vals in self.point_values(sweep, metric, keys, flows, where).items():
            m, h = mean_ci(list(vals.values()))
            out[k] = (m, h, len(vals))
        return out


def paired(a: dict[int, float], b: dict[int, float], fn: Callable[[float, float], float]) -> list[float]:
    """`fn(a[s], b[s])` for every seed s the two per-seed maps share (paired comparison: the
    same seed drives both configurations' random streams)."""
    return [fn(a[s], b[s]) for s in sorted(set(a) & set(b))]


def ratio(a: dict[int, float], b: dict[int, float]) -> list[float]:
    """Per-seed a/b over the seeds both have."""
    return paired(a, b, lambda x, y: x / y if y else math.nan)


@dataclass
class SuiteReport:
    name: str
    title: str
    source: str
    description: str
    quick: bool
    claims: list[tuple[Claim, ClaimResult]]
    figures: list[Figure]
    sweeps: dict[str, str]  # sweep name -> directory


def run_suite(module: Any, out_dir: Path, quick: bool, jobs: int | None = None, ray: str | None = None,
              progress: bool = True, seeds: int | None = None) -> SuiteReport:
    """Run a suite's sweeps (`seeds`, if given, replaces every sweep's seed count), evaluate its
    claims and draw its figures."""
    from ..sweeps import Sweep, run_sweep

    suite_dir = Path(out_dir) / module.NAME
    results = {}
    dirs = {}
    for sd in module.sweeps(quick):
        base, vary, n_seeds = sd.resolve(quick, seeds)
        d = suite_dir / sd.name
        if progress:
            import sys
            print(f"[{module.NAME}] sweep {sd.name}", file=sys.stderr, flush=True)
        results[sd.name] = run_sweep(Sweep(base=base, vary=vary, seeds=n_seeds), d, jobs=jobs, ray=ray,
                                     progress=progress)
        dirs[sd.name] = str(d)
    run = SuiteRun(results, quick)
    evaluated = [(c, evaluate(c, run)) for c in module.claims()]
    figs = module.figures(run)
    if figs:
        # The report renders them later; pyplot need not keep every suite's figures open.
        import matplotlib.pyplot as plt

        for f in figs:
            plt.close(f.fig)
    return SuiteReport(module.NAME, module.TITLE, module.SOURCE, module.DESCRIPTION, quick, evaluated, figs, dirs)


def verdict_cell(res: ClaimResult) -> str:
    """The verdict as shown: "holds", "misses (class)", "inconclusive (≈N seeds would decide)"
    or "reported"."""
    if res.verdict == "misses":
        return f"misses ({res.miss_class})"
    if res.verdict == "inconclusive":
        if res.seeds_to_decide:
            return f"inconclusive (≈{res.seeds_to_decide} seeds would decide)"
        return f"inconclusive ({undecided_reason(res.checks)})"
    return res.verdict


def write_report(reports: list[SuiteReport], out_dir: Path, code_version: str) -> Path:
    """Write `report.html` (self-contained: the tally, a table of contents, one section per
    suite) and `claims.json` into `out_dir`; also each figure as a PNG under
    `<suite>/figures/`. Returns the report path."""
    from ..report import figure_png_b64, html_page, html_table, write_html
    from ..results import write_atomic
    import base64
    import html as _html

    out_dir = Path(out_dir)
    counts = tally(reports)
    quick = any(r.quick for r in reports)
    title = "lasthop reproduce — " + (", ".join(r.title for r in reports) if len(reports) <= 2
                                      else f"{len(reports)} suites")
    body = [f"<h1>{_html.escape(title)}</h1>",
            f"<p class='meta'>Code version <code>{_html.escape(code_version)}</code>. Every number below is "
            "computed from the sweep files listed with each suite.</p>"]
    if quick:
        body.append("<p class='note'><b>Quick mode is a smoke test:</b> few seeds and short runs. A verdict "
                    "needs the 95 % CI over seeds on one side of the band, so many rows are inconclusive "
                    "here; run without <code>--quick</code> for verdicts.</p>")
    body.append("<h2 id='summary'>Summary</h2>")
    body.append(f"<p><b>{_html.escape(tally_line(counts['total']))}.</b></p>")
    body.append("<p>A claim <i>holds</i> when the 95 % confidence interval over seeds of every quantity it "
                "tests lies inside its band, <i>misses</i> when one lies outside (each miss is classed: "
                "<i>setup differs</i>, <i>model gap</i> or <i>disagrees with the paper</i>, with the evidence), "
                "and is <i>inconclusive</i> when an interval straddles an edge. <i>Reported</i> rows have no "
                "falsifiable band and are never counted as holding.</p>")
    srows = []
    for r in reports:
        c = counts["suites"][r.name]
        cls = ", ".join(f"{k} {v}" for k, v in c["miss_classes"].items() if v)
        srows.append([f"{r.title}", f"{c['holds']}/{c['falsifiable']}", c["misses"], cls or "–",
                      c["inconclusive"], c["reported"]])
    body.append(html_table(["suite", "hold / falsifiable", "miss", "misses by class", "inconclusive", "reported"],
                           srows))
    body.append("<h2 id='contents'>Contents</h2><ul>"
                + "<li><a href='#all-claims'>All claims</a></li>"
                + "".join(f"<li><a href='#{_html.escape(r.name)}'>{_html.escape(r.title)}</a></li>" for r in reports)
                + "</ul>")
    summary_rows = []
    for r in reports:
        for c, res in r.claims:
            summary_rows.append([r.name, c.id, c.text, c.published, c.band, verdict_cell(res)])
    body.append("<h2 id='all-claims'>All claims</h2>")
    body.append(html_table(["suite", "claim", "what", "published", "band", "verdict"], summary_rows,
                           classes=[None] * 5 + ["verdict"]))
    machine = []
    for r in reports:
        body.append(f"<h2 id='{_html.escape(r.name)}'>{_html.escape(r.title)}</h2>")
        body.append(f"<p><b>Source:</b> {_html.escape(r.source)}</p><p>{_html.escape(r.description)}</p>")
        body.append(f"<p><b>{_html.escape(tally_line(counts['suites'][r.name]))}.</b></p>")
        rows = []
        for c, res in r.claims:
            why = res.explanation
            if res.verdict == "misses":
                why = f"[{res.miss_class}] {why}"
            band = c.band + (f" — {c.source}" if c.source else "")
            rows.append([c.id, c.text, c.published, res.value, res.checks_text or "–", band,
                         verdict_cell(res), why])
            machine.append({"suite": r.name, "claim": c.id, "text": c.text, "published": c.published,
                            "ours": res.value, "checks": [
                                {"label": k.label, "mean": k.mean, "ci95": k.half, "n": k.n, "lo": k.lo,
                                 "hi": k.hi, "status": k.status(), "point_in_band": k.point_in_band()}
                                for k in res.checks],
                            "checks_text": res.checks_text, "band": c.band, "band_source": c.source,
                            "verdict": res.verdict, "holds": res.holds, "miss_class": res.miss_class,
                            "seeds_to_decide": res.seeds_to_decide, "point_verdict": res.point_verdict,
                            "explanation": res.explanation, "detail": res.detail})
        body.append(html_table(["claim", "what", "published", "ours", "tested (mean ± 95 % CI over seeds) [band]",
                                "band", "verdict", "why"], rows, classes=[None] * 6 + ["verdict", None]))
        fig_dir = out_dir / r.name / "figures"
        fig_dir.mkdir(parents=True, exist_ok=True)
        for i, f in enumerate(r.figures):
            b64 = figure_png_b64(f.fig)
            write_atomic(fig_dir / f"{i + 1:02d}-{_slug(f.title)}.png", base64.b64decode(b64))
            body.append(f"<figure><img alt='{_html.escape(f.title)}' src='data:image/png;base64,{b64}'>"
                        f"<figcaption><b>{_html.escape(f.title)}.</b> {_html.escape(f.caption)}</figcaption></figure>")
        body.append("<p>Sweep data: " + ", ".join(f"<code>{_html.escape(d)}</code>" for d in r.sweeps.values()) + "</p>")
    page = html_page(title, "\n".join(body))
    path = out_dir / "report.html"
    write_html(path, page)
    write_atomic(out_dir / "claims.json", (json.dumps({"code_version": code_version, "quick": quick,
                                                       "tally": counts, "claims": machine}, indent=1,
                                                       sort_keys=True, default=_jsonable) + "\n").encode())
    return path


def _jsonable(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return str(x)


def _slug(s: str) -> str:
    return "".join(ch.lower() if ch.isalnum() else "-" for ch in s).strip("-")[:60]


def mean(xs: Iterable[Any], skip_missing: bool = False) -> float:
    """Arithmetic mean (NaN for none); with `skip_missing`, None and NaN values are left out."""
    vals = list(xs)
    if skip_missing:
        vals = [x for x in vals if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return sum(vals) / len(vals) if vals else float("nan")


def fmt_pct(x: float) -> str:
    return f"{x * 100:+.2f}%"
