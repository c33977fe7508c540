"""`lasthop table | plot | report`: analysis from files (docs/experiments.md).

    lasthop table  -i RESULTS [--by KEY ...] [--metric M ...] [--format text|csv|markdown]
    lasthop plot   -i RESULTS [--kind timeseries|all|cdf|box|bar|ampdu|xy] [--metric M]
                   [--x KEY] [-o FILE.png|FILE.svg|FILE.pdf]
    lasthop report -i RESULTS [-o FILE.html]

Every argument is checked and the figure or page is fully rendered before anything is written;
files are written atomically. Errors are user errors (exit 2, one line).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, Callable

from .errors import EXIT_OK, UserError

__all__ = ["add_parsers", "COMMANDS"]


def add_parsers(sub: Any) -> None:
    t = sub.add_parser("table", help="per-flow table aggregated across seeds (from files)")
    t.add_argument("-i", "--input", required=True, metavar="RESULTS",
                   help="sweep dir, summary.parquet, result file or dir of result files")
    t.add_argument("--by", action="append", metavar="KEY",
                   help="group by KEY (repeatable; default: the varied keys and flow)")
    t.add_argument("--metric", action="append", metavar="M",
                   help="metric column (repeatable or comma-separated; default: goodput_bps, "
                        "delay_mean_ms, delay_p99_ms, loss)")
    t.add_argument("--format", default="text", choices=["text", "csv", "markdown"])

    p = sub.add_parser("plot", help="plot results to PNG, SVG or PDF (from files)")
    p.add_argument("-i", "--input", required=True, metavar="RESULTS")
    p.add_argument("--kind", default=None, metavar="KIND",
                   help="timeseries|all|cdf|box|bar|ampdu|xy (default: timeseries for one "
                        "run, bar for several)")
    p.add_argument("--metric", default=None, metavar="M",
                   help="timeseries: a stored series (flow_cwnd_bytes, node_backlog_packets, "
                        "...) or an alias: goodput, delay, rtt, cwnd, inflight, pacing, "
                        "retransmits, aggctl_rate, aggctl_est, backlog, queue_limit, snr, "
                        "phy_rate, ampdu, airtime; cdf, box, bar, xy: a table metric such as "
                        "goodput_bps")
    p.add_argument("--x", default=None, metavar="KEY", help="numeric varied key (--kind xy)")
    p.add_argument("-o", "--out", default=None, metavar="FILE",
                   help="output file, .png, .svg or .pdf (default: PNG next to the input)")

    r = sub.add_parser("report", help="self-contained HTML report (from files)")
    r.add_argument("-i", "--input", required=True, metavar="RESULTS")
    r.add_argument("-o", "--out", default=None, metavar="FILE.html",
                   help="output file (default: next to the input)")


def _split(values: list[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out += [s.strip() for s in v.split(",") if s.strip()]
    return out


def _default_out(src: Path, stem: str, suffix: str) -> Path:
    """`DIR/<stem><suffix>` for a directory input, else next to the file."""
    if src.is_dir():
        return src / f"{stem}{suffix}"
    if src.suffix == ".parquet":
        return src.parent / f"{stem}{suffix}"
    return src.parent / f"{src.stem}-{stem}{suffix}"


def _check_out_file(out: Path, suffix: str | None, option: str = "-o") -> None:
    """Check that `out` can be written; `suffix` None: any suffix (checked by the caller)."""
    if suffix is not None and out.suffix.lower() != suffix:
        raise UserError(f"{option} {out}: the file name must end with {suffix}")
    if out.is_dir():
        raise UserError(f"{option} {out}: is a directory")
    parent = out.absolute().parent
    probe = parent
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise UserError(f"{option} {out}: {probe} is not a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UserError(f"{option} {out}: {probe} is not writable")
    if out.exists() and not os.access(out, os.W_OK):
        raise UserError(f"{option} {out}: not writable")


def cmd_table(args: argparse.Namespace) -> int:
    from .analysis import DEFAULT_TABLE_METRICS, check_keys, default_by, format_table, load, metric

    metrics = _split(args.metric) or list(DEFAULT_TABLE_METRICS)
    for m in metrics:
        metric(m)
    res = load(args.input)
    by = _split(args.by) or default_by(res)
    check_keys(res, by)
    print(format_table(res, by, metrics, args.format))
    return EXIT_OK


def cmd_plot(args: argparse.Namespace) -> int:
    from .analysis import load
    from .plots import KINDS, figure_bytes, make_plot, output_format, validate_plot
    from .results import write_atomic

    if args.kind is not None and args.kind not in KINDS:
        raise UserError(f"--kind {args.kind}: one of {', '.join(KINDS)}")
    if args.out is not None:
        output_format(args.out)  # the format by the suffix, before reading anything
    res = load(args.input)
    kind = args.kind or ("timeseries" if len(res.runs) == 1 else "bar")
    validate_plot(res, kind, args.metric, args.x)
    if args.out is None:
        stem = kind + (f"-{args.metric}" if args.metric else "") + (f"-{args.x}" if args.x else "")
        stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in stem)
        out = _default_out(Path(args.input), stem, ".png")
    else:
        out = Path(args.out)
    _check_out_file(out, None)
    fig = make_plot(res, kind, args.metric, args.x)
    data = figure_bytes(fig, output_format(out))  # render fully before creating anything
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, data)
    print(f"plot: {out}")
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from .analysis import load
    from .report import build_report, write_html

    res = load(args.input)
    out = Path(args.out) if args.out else _default_out(Path(args.input), "report", ".html")
    _check_out_file(out, ".html")
    page, n = build_report(res)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_html(out, page)
    print(f"report: {out} ({n} plots)")
    return EXIT_OK


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "table": cmd_table, "plot": cmd_plot, "report": cmd_report}
