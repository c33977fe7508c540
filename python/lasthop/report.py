"""Self-contained HTML reports: one file, inline CSS, plots as base64 PNG `data:` URIs, no
JavaScript and no external resource. Output is deterministic (no timestamps).

`build_report(res) -> str` makes the `lasthop report` page for loaded results
(`lasthop.analysis.load`): a header (spec name(s), code version(s), seeds, input), per-flow
summary tables (mean ± 95 % CI across seeds), channel and station tables, and every plot kind
that applies to the input (`lasthop.plots`).

Building blocks (also used by `lasthop reproduce` for its own report):

- `figure_png_b64(fig) -> str`: a matplotlib Figure (pyplot-made or not) rendered as PNG at a
  fixed DPI without metadata, base64-encoded (ASCII). The figure is not closed.
- `html_img(b64, alt) -> str`: an `<img>` with the PNG as a `data:image/png;base64,` URI.
- `html_figure(fig_or_b64, title, caption="") -> str`: `<figure>` with image and caption.
- `html_table(headers, rows, classes=None) -> str`: a `<table>`; every header and cell is
  HTML-escaped (cells go through `str()`, floats through `:.4g`, None/NaN show as "–"). Numeric
  cells get class `num` (right-aligned). `classes`, if given, has one entry per column:
  None; a class name (string) for every cell of that column; or a callable `cell -> class name
  or None` for per-cell classes. The column class `"verdict"` is special: each cell also gets
  `holds` (green) when its text starts with "holds"/"yes"/"true"/"pass", or `fails` (red) when
  it starts with "does not hold"/"misses"/"fails"/"no"/"false"/"fail", or `open` (amber) when it
  starts with "inconclusive" (case-insensitive; booleans too).
- `html_page(title, body_html) -> str`: the complete page shell (doctype, charset, title,
  shared CSS with classes `holds`, `fails`, `num`, `muted`, `note`, `meta`); the title is
  escaped, `body_html` is inserted as is.
- `write_html(path, html)`: write UTF-8 atomically (temporary file + fsync + rename).
- `esc(text)`: `html.escape` of `str(text)`, quotes included.
"""

from __future__ import annotations

import base64
import html as _html
import math
from pathlib import Path
from typing import Any, Callable, Sequence

from .analysis import METRICS, Results, aggregate, group_rows
from .results import write_atomic

__all__ = ["CSS", "esc", "figure_png_b64", "html_img", "html_figure", "html_table",
           "html_page", "write_html", "build_report", "report_plots"]

CSS = """
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --head: #f6f8fa;
        --holds-bg: #dafbe1; --holds-fg: #116329; --fails-bg: #ffebe9; --fails-fg: #a40e26;
        --open-bg: #fff8c5; --open-fg: #7d4e00; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: #fff;
       font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 64px; }
h1 { font-size: 1.7em; margin: 0 0 .3em; }
h2 { font-size: 1.3em; margin: 1.8em 0 .6em; padding-bottom: .25em;
     border-bottom: 1px solid var(--line); }
h3 { font-size: 1.08em; margin: 1.4em 0 .5em; }
code { font: .9em ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace;
       background: var(--head); padding: .1em .3em; border-radius: 4px; }
.muted, .note { color: var(--muted); }
.note { font-size: .9em; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: .2em 1.2em; margin: 1em 0; }
dl.meta dt { font-weight: 600; }
dl.meta dd { margin: 0; }
.table-wrap { overflow-x: auto; margin: .6em 0 1.2em; }
table { border-collapse: collapse; font-size: .88em; }
th, td { border: 1px solid var(--line); padding: .3em .6em; text-align: left; vertical-align: top; }
th { background: var(--head); font-weight: 600; }
tbody tr:nth-child(even) td { background: #fbfcfd; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.holds, tbody tr:nth-child(even) td.holds { background: var(--holds-bg); color: var(--holds-fg);
                                               font-weight: 600; }
td.fails, tbody tr:nth-child(even) td.fails { background: var(--fails-bg); color: var(--fails-fg);
                                               font-weight: 600; }
td.open, tbody tr:nth-child(even) td.open { background: var(--open-bg); color: var(--open-fg);
                                             font-weight: 600; }
figure { margin: 1.2em 0 2em; }
figure img { display: block; max-width: 100%; height: auto; border: 1px solid var(--line);
             border-radius: 6px; }
figcaption { color: var(--muted); font-size: .9em; margin-top: .4em; max-width: 900px; }
nav.toc { font-size: .92em; }
nav.toc a { margin-right: 1em; }
"""


def esc(text: Any) -> str:
    return _html.escape(str(text), quote=True)


def figure_png_b64(fig: Any) -> str:
    from .plots import png_bytes

    return base64.b64encode(png_bytes(fig)).decode("ascii")


def html_img(b64: str, alt: str) -> str:
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{b64}">'


def html_figure(fig_or_b64: Any, title: str, caption: str = "") -> str:
    b64 = fig_or_b64 if isinstance(fig_or_b64, str) else figure_png_b64(fig_or_b64)
    cap = f"<b>{esc(title)}.</b>" + (f" {esc(caption)}" if caption else "")
    return f"<figure>{html_img(b64, title)}<figcaption>{cap}</figcaption></figure>"


_HOLDS = ("holds", "yes", "true", "pass")
_FAILS = ("does not hold", "doesn't hold", "misses", "fails", "fail", "no", "false")
_OPEN = ("inconclusive",)


def _verdict(cell: Any) -> str | None:
    if isinstance(cell, bool):
        return "holds" if cell else "fails"
    t = str(cell).strip().lower()
    if any(t.startswith(w) for w in _FAILS):
        return "fails"
    if any(t.startswith(w) for w in _OPEN):
        return "open"
    if any(t.startswith(w) for w in _HOLDS):
        return "holds"
    return None


def _cell_text(cell: Any) -> str:
    if cell is None:
        return "–"
    if isinstance(cell, float):
        return "–" if math.isnan(cell) else f"{cell:.4g}"
    return str(cell)


def html_table(headers: Sequence[Any], rows: Sequence[Sequence[Any]],
               classes: Sequence[str | Callable[[Any], str | None] | None] | None = None) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            cls: list[str] = []
            if isinstance(cell, (int, float)) and not isinstance(cell, bool):
                cls.append("num")
            spec = classes[i] if classes is not None and i < len(classes) else None
            if callable(spec):
                c = spec(cell)
                if c:
                    cls.append(str(c))
            elif spec:
                cls.append(str(spec))
                if spec == "verdict":
                    v = _verdict(cell)
                    if v:
                        cls.append(v)
            attr = f' class="{esc(" ".join(cls))}"' if cls else ""
            cells.append(f"<td{attr}>{esc(_cell_text(cell))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def html_page(title: str, body_html: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{esc(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n"
            f"{body_html}\n</main>\n</body>\n</html>\n")


def write_html(path: str | Path, html: str) -> Path:
    """Write an HTML page atomically."""
    return write_atomic(path, html.encode("utf-8"))

# ---------------------------------------------------------------------------------------------
# The `lasthop report` page

FLOW_METRICS = ["goodput_bps", "offered_bps", "delay_mean_ms", "delay_p50_ms", "delay_p95_ms",
                "delay_p99_ms", "delay_max_ms", "loss", "mean_ampdu", "airtime_frac"]
RUN_METRICS = ["busy_frac", "collisions"]


def _mean_ci_text(values: Any, scale: float, digits: int) -> str:
    a = aggregate(values)
    if not a.n:
        return "–"
    text = f"{a.mean * scale:.{digits}f}"
    if a.n > 1:
        text += f" ± {a.ci95 * scale:.{digits}f}"
    return text


def report_plots(res: Results) -> list[tuple[str, str | None, str | None, str, str]]:
    """The plots of the report: (kind, metric, x, title, caption)."""
    multi = len(res.runs) > 1
    plots: list[tuple[str, str | None, str | None, str, str]] = []
    if multi:
        ci = "Bars: mean over seeds; error bars: 95 % Student-t confidence interval."
        plots.append(("bar", "goodput_bps", None, "Goodput per grid point", ci))
        plots.append(("bar", "delay_p99_ms", None, "99th-percentile delay per grid point", ci))
        plots.append(("bar", "airtime_frac", None, "Airtime share per grid point", ci))
        for key in res.numeric_keys():
            band = "Lines: mean over seeds; bands: 95 % Student-t confidence interval."
            plots.append(("xy", "goodput_bps", key, f"Goodput vs {key}", band))
            plots.append(("xy", "delay_mean_ms", key, f"Mean delay vs {key}", band))
            plots.append(("xy", "delay_p99_ms", key, f"99th-percentile delay vs {key}", band))
        plots.append(("box", "goodput_bps", None, "Goodput per grid point, every flow and seed",
                      "Boxes: quartiles and median over flows and seeds, whiskers 1.5 IQR, "
                      "dots the values; data flows, ping flows and cross traffic apart."))
        plots.append(("cdf", "delay_p99_ms", None, "CDF of per-flow 99th-percentile delay",
                      "Empirical CDF over all flows and seeds, one curve per grid point (and "
                      "flow class: a ping flow's delay is its RTT)."))
    else:
        plots.append(("cdf", None, None, "Delay distribution per flow",
                      "Result files store each flow's p50, p95, p99 and maximum delay (one-way; "
                      "a ping flow's is its RTT); the points are those values, the dotted lines "
                      "only join them."))
    if res.has_run_files():
        try:
            point, seed = res.first_run()
        except Exception:
            return plots
        which = (f" Run shown: point {point} ({res.point_label(point)}), seed {seed}."
                 if multi else "")
        plots += [
            ("all", None, None, "Combined view",
             "Goodput and latency per flow over time (RTT for ping flows, one-way delay for "
             "the others), with the congestion window of TCP/QUIC flows and the queue backlog "
             "of the AP and relays beneath when the run has them; the warmup is shaded."
             + which),
            ("timeseries", "goodput", None, "Goodput over time",
             "Per flow, per time bin; the warmup (not measured) is shaded." + which),
            ("timeseries", "delay", None, "Mean delay over time",
             "Mean delay of the packets delivered in each bin (one-way; a ping flow's is its "
             "RTT); gaps are bins with no delivery." + which),
            ("timeseries", "ampdu", None, "A-MPDU size over time",
             "Mean MPDUs per downlink A-MPDU per station; gaps are bins without a PPDU."
             + which),
            ("timeseries", "airtime", None, "Airtime share over time",
             "Share of each bin during which the station's exchanges occupy the channel."
             + which),
            ("ampdu", None, None, "A-MPDU size distribution",
             "Share of PPDUs carrying n MPDUs, per station and direction, after warmup."
             + which),
        ]
    return plots


def build_report(res: Results, title: str | None = None) -> tuple[str, int]:
    """The report page for `res` and the number of plots in it."""
    from .plots import make_plot

    names = ", ".join(res.spec_names) or res.source.name
    title = title or f"lasthop report — {names}"
    seeds = res.seeds
    seed_text = (", ".join(map(str, seeds)) if len(seeds) <= 12
                 else f"{seeds[0]} … {seeds[-1]} ({len(seeds)} seeds)")
    meta = [("input", f"<code>{esc(res.source)}</code> ({esc(res.kind)})"),
            ("spec", esc(names)),
            ("code version", ", ".join(f"<code>{esc(v)}</code>" for v in res.code_versions)
             or "–"),
            ("seeds", esc(seed_text)),
            ("runs", f"{len(res.runs)} ({len(res.points)} grid point(s) × seeds)"),
            ("flows", str(len({r['flow'] for r in res.rows})))]
    if res.varied:
        meta.append(("varied", ", ".join(f"<code>{esc(k)}</code>" for k in res.varied)))
    body = [f"<h1>{esc(title)}</h1>",
            '<dl class="meta">' + "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in meta)
            + "</dl>"]

    # Per-flow summary.
    multi = len(res.runs) > 1
    body.append("<h2 id=\"flows\">Per-flow summary</h2>")
    if multi:
        body.append('<p class="note">Mean ± half-width of the 95 % Student-t confidence '
                    "interval across seeds (n = number of seeds).</p>")
    by = [*res.varied, "flow"]
    headers = [*res.varied, "flow", "sta", "dir", "pattern", "n"]
    headers += [METRICS[m].axis_label() for m in FLOW_METRICS]
    rows = []
    for key, grp in group_rows(res, by):
        first = grp[0]
        sta = "cross traffic" if first["direction"] == "cross" else first["station"]
        row: list[Any] = [*(res.text(first, k) for k in res.varied), first["flow"], sta,
                          first["direction"], first["pattern"], len(grp)]
        for m in FLOW_METRICS:
            info = METRICS[m]
            row.append(_mean_ci_text((r.get(m) for r in grp), info.scale, info.digits))
        rows.append(row)
    n_key = len(res.varied) + 5
    body.append(html_table(headers, rows, classes=[None] * n_key + ["num"] * len(FLOW_METRICS)))

    # Channel per grid point.
    body.append("<h2 id=\"channel\">Channel</h2>")
    ch_rows = []
    for key, grp in group_rows(res, res.varied + ["point"] if res.varied else ["point"]):
        per_run = {}
        for r in grp:
            per_run.setdefault(r["seed"], r)
        runs = list(per_run.values())
        row = [*(res.text(grp[0], k) for k in res.varied), key[-1], len(runs)]
        total = {}
        for r in grp:
            total[r["seed"]] = total.get(r["seed"], 0.0) + (r.get("goodput_bps") or 0.0)
        row.append(_mean_ci_text(total.values(), 1e-6, 2))
        for m in RUN_METRICS:
            info = METRICS[m]
            row.append(_mean_ci_text((r.get(m) for r in runs), info.scale, info.digits))
        ch_rows.append(row)
    body.append(html_table([*res.varied, "point", "n", "total goodput (Mb/s)",
                            *(METRICS[m].axis_label() for m in RUN_METRICS)], ch_rows,
                           classes=[None] * (len(res.varied) + 2) + ["num"] * 3))

    # Stations of a single run.
    if not multi and res.has_run_files():
        point, seed = res.first_run()
        data = res.load_run(point, seed).get("data") or {}
        sc = res.load_run(point, seed).get("spec") or {}
        sim = sc.get("sim") or {}
        window = (sim.get("duration_ns") or 0) - (sim.get("warmup_ns") or 0)
        st_rows = []
        for i, s in enumerate(data.get("stations") or []):
            air = (s.get("airtime_tx_ns") or 0) + (s.get("airtime_rx_ns") or 0)
            rate = s.get("phy_rate_bps")
            st_rows.append([s.get("id", i), s.get("mcs"), s.get("nss"),
                            f"{rate / 1e6:.1f}" if isinstance(rate, (int, float)) else "–",
                            f"{s.get('mean_ampdu_down') or 0:.2f}",
                            f"{s.get('mean_ampdu_up') or 0:.2f}",
                            f"{100.0 * air / window:.2f}" if window > 0 else "–"])
        if st_rows:
            body.append("<h2 id=\"stations\">Stations</h2>")
            body.append(html_table(["sta", "MCS", "NSS", "PHY rate (Mb/s)",
                                    "mean A-MPDU down (MPDUs)", "mean A-MPDU up (MPDUs)",
                                    "airtime (%)"], st_rows, classes=[None] + ["num"] * 6))

    # Plots.
    plots = report_plots(res)
    body.append("<h2 id=\"plots\">Plots</h2>")
    n = 0
    for kind, metric_name, x, ptitle, caption in plots:
        fig = make_plot(res, kind, metric_name, x)
        body.append(html_figure(fig, ptitle, caption))
        n += 1
    body.append('<p class="note">Generated by <code>lasthop report</code> from the files above; '
                "no simulation was run.</p>")
    return html_page(title, "\n".join(body)), n
