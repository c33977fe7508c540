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

`run_suite` runs the sweeps (cached and resumable, through `lasthop.sweep`), evaluates every
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

    def resolve(self, quick: bool) -> tuple[dict, list[tuple[str, list]], int]:
        base = copy.deepcopy(self.base)
        if quick and self.quick:
            _merge(base, self.quick)
        vary = self.quick_vary if (quick and self.quick_vary is not None) else self.vary
        return base, vary, self.quick_seeds if quick else self.seeds


def _merge(dst: dict, src: dict) -> None:
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            _merge(dst[k], v)
        else:
            dst[k] = copy.deepcopy(v)


@dataclass
class ClaimResult:
    value: str
    holds: bool
    explanation: str = ""
    detail: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Claim:
    id: str
    text: str
    published: str
    band: str
    check: Callable[["SuiteRun"], ClaimResult]


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

    def by_point(self, sweep: str, metric: str, keys: Iterable[str], flows: str = "sum",
                 where: Callable[[dict], bool] | None = None) -> dict[tuple, tuple[float, float, int]]:
        """Mean, 95 % CI half-width and n across seeds of `metric` per value of `keys`.
        `flows="sum"` adds the metric over the flows of a run first (e.g. total goodput);
        `flows="mean"` averages it; `flows="first"` takes flow 0."""
        from ..analysis import mean_ci

        keys = list(keys)
        per_run: dict[tuple, dict[int, list[float]]] = {}
        for r in self.rows(sweep):
            if where is not None and not where(r):
                continue
            k = tuple(r[key] for key in keys)
            per_run.setdefault(k, {}).setdefault(r["seed"], []).append(r[metric])
        out = {}
        for k, seeds in per_run.items():
            vals = []
            for _, xs in sorted(seeds.items()):
                if flows == "sum":
                    vals.append(float(sum(xs)))
                elif flows == "mean":
                    vals.append(float(sum(xs)) / len(xs))
                else:
                    vals.append(float(xs[0]))
            m, h = mean_ci(vals)
            out[k] = (m, h, len(vals))
        return out


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
              progress: bool = True) -> SuiteReport:
    from ..sweep import Sweep, run_sweep

    suite_dir = Path(out_dir) / module.NAME
    results = {}
    dirs = {}
    for sd in module.sweeps(quick):
        base, vary, seeds = sd.resolve(quick)
        d = suite_dir / sd.name
        if progress:
            import sys
            print(f"[{module.NAME}] sweep {sd.name}", file=sys.stderr, flush=True)
        results[sd.name] = run_sweep(Sweep(base=base, vary=vary, seeds=seeds), d, jobs=jobs, ray=ray,
                                     progress=progress)
        dirs[sd.name] = str(d)
    run = SuiteRun(results, quick)
    evaluated = []
    for c in module.claims():
        try:
            res = c.check(run)
        except Exception as e:  # a claim that cannot be evaluated is reported, not fatal
            res = ClaimResult("—", False, f"could not be evaluated: {type(e).__name__}: {e}")
        evaluated.append((c, res))
    figs = module.figures(run)
    return SuiteReport(module.NAME, module.TITLE, module.SOURCE, module.DESCRIPTION, quick, evaluated, figs, dirs)


def write_report(reports: list[SuiteReport], out_dir: Path, code_version: str) -> Path:
    """Write `report.html` (self-contained) and `claims.json` into `out_dir`; also each figure
    as a PNG under `<suite>/figures/`. Returns the report path."""
    from ..report import figure_png_b64, html_page, html_table, write_html
    from ..results import write_atomic
    import base64
    import html as _html

    out_dir = Path(out_dir)
    title = "lasthop reproduce — " + ", ".join(r.title for r in reports)
    body = [f"<h1>{_html.escape(title)}</h1>", f"<p>Code version <code>{_html.escape(code_version)}</code>. "
            + ("Quick mode: fewer seeds and shorter runs; spreads are wide. " if any(r.quick for r in reports) else "")
            + "Every number below is computed from the sweep files listed with each suite.</p>"]
    summary_rows = []
    for r in reports:
        for c, res in r.claims:
            summary_rows.append([r.name, c.id, c.text, c.published, res.value, c.band,
                                 ("holds" if res.holds else "does not hold")])
    body.append("<h2>All claims</h2>")
    body.append(html_table(["suite", "claim", "what", "published", "ours", "band", "verdict"], summary_rows,
                           classes=[None] * 6 + ["verdict"]))
    machine = []
    for r in reports:
        body.append(f"<h2 id='{_html.escape(r.name)}'>{_html.escape(r.title)}</h2>")
        body.append(f"<p><b>Source:</b> {_html.escape(r.source)}</p><p>{_html.escape(r.description)}</p>")
        rows = []
        for c, res in r.claims:
            rows.append([c.id, c.text, c.published, res.value, c.band,
                         "holds" if res.holds else "does not hold", res.explanation])
            machine.append({"suite": r.name, "claim": c.id, "text": c.text, "published": c.published,
                            "ours": res.value, "band": c.band, "holds": res.holds,
                            "explanation": res.explanation, "detail": res.detail})
        body.append(html_table(["claim", "what", "published", "ours (mean ± 95 % CI over seeds)", "band", "verdict",
                                "why"], rows, classes=[None] * 5 + ["verdict", None]))
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
    write_atomic(out_dir / "claims.json", (json.dumps({"code_version": code_version, "claims": machine}, indent=1,
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
