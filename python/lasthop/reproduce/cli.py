"""The `lasthop reproduce` subcommand."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import load, names


def add_parser(sub) -> None:
    r = sub.add_parser("reproduce", help="run reproduction suites and write a report of our numbers vs the published ones")
    r.add_argument("suite", nargs="?", default=None, metavar="SUITE|all", help=f"one of: {', '.join(names())}, or all")
    r.add_argument("--list", action="store_true", help="list the suites and their claims")
    r.add_argument("--quick", action="store_true", help="fewer seeds and shorter runs (minutes on 2 cores)")
    r.add_argument("--seeds", type=int, default=None, metavar="N",
                   help="seeds per point for every sweep (default: each sweep's own; more seeds decide "
                        "inconclusive claims)")
    r.add_argument("-o", "--out", default=None, metavar="DIR",
                   help="output directory (default: results/reproduce, or results/reproduce-quick with --quick)")
    r.add_argument("-j", "--jobs", type=int, default=None, metavar="N", help="parallel runs (default: CPUs)")
    r.add_argument("--ray", default=None, metavar="ADDRESS", help="run on a Ray cluster ('local' starts one in-process)")
    r.add_argument("-q", "--quiet", action="store_true", help="no progress output")


def cmd_reproduce(args: argparse.Namespace) -> int:
    from ..errors import UserError
    from ..native import code_version

    if args.list:
        for n in names():
            m = load(n)
            print(f"{n}: {m.TITLE}\n  source: {m.SOURCE}")
            for c in m.claims():
                print(f"  {c.id}: {c.text} — published: {c.published}; band: {c.band}")
        return 0
    if args.suite is None:
        raise UserError(f"reproduce: name a suite ({', '.join(names())}) or all, or use --list")
    if args.suite != "all" and args.suite not in names():
        raise UserError(f"reproduce: unknown suite {args.suite!r}; one of: {', '.join(names())}, all")
    if args.seeds is not None and not 1 <= args.seeds <= 1000:
        raise UserError(f"reproduce: --seeds = {args.seeds}: an integer in 1..=1000")
    if args.jobs is not None and args.jobs < 1:
        raise UserError(f"reproduce: --jobs = {args.jobs}: an integer >= 1")
    chosen = names() if args.suite == "all" else [args.suite]
    out = Path(args.out) if args.out else Path("results") / ("reproduce-quick" if args.quick else "reproduce")
    if out.exists() and not out.is_dir():
        raise UserError(f"reproduce: output {str(out)!r} exists and is not a directory")

    from .framework import run_suite, write_report

    reports = []
    for n in chosen:
        reports.append(run_suite(load(n), out, quick=args.quick, jobs=args.jobs, ray=args.ray, progress=not args.quiet,
                                 seeds=args.seeds))
    path = write_report(reports, out, code_version())
    from .framework import tally, tally_line, verdict_cell

    for r in reports:
        for c, res in r.claims:
            line = f"{r.name} {c.id}: {verdict_cell(res)}: ours {res.value}"
            if res.checks_text:
                line += f" — tested: {res.checks_text}"
            if res.verdict == "misses" and res.explanation:
                line += f" — {res.explanation}"
            print(line)
    counts = tally(reports)
    for r in reports:
        print(f"{r.name}: {tally_line(counts['suites'][r.name])}")
    if args.quick:
        print("Quick mode is a smoke test (few seeds, short runs): run without --quick for verdicts.")
    print(f"{tally_line(counts['total'])}. Report: {path}", file=sys.stdout)
    return 0
