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
    r.add_argument("-o", "--out", default=None, metavar="DIR",
                   help="output directory (default: results/reproduce, or results/reproduce-quick with --quick)")
    r.add_argument("-j", "--jobs", type=int, default=None, metavar="N", help="parallel runs (default: CPUs)")
    r.add_argument("--ray", default=None, metavar="ADDRESS", help="run on a Ray cluster ('local' starts one in-process)")
    r.add_argument("-q", "--quiet", action="store_true", help="no progress output")


def cmd_reproduce(args: argparse.Namespace) -> int:
    from ..cli import UserError, code_version

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
    if args.jobs is not None and args.jobs < 1:
        raise UserError(f"reproduce: --jobs = {args.jobs}: an integer >= 1")
    chosen = names() if args.suite == "all" else [args.suite]
    out = Path(args.out) if args.out else Path("results") / ("reproduce-quick" if args.quick else "reproduce")
    if out.exists() and not out.is_dir():
        raise UserError(f"reproduce: output {str(out)!r} exists and is not a directory")

    from .framework import run_suite, write_report

    reports = []
    for n in chosen:
        reports.append(run_suite(load(n), out, quick=args.quick, jobs=args.jobs, ray=args.ray, progress=not args.quiet))
    path = write_report(reports, out, code_version())
    held = sum(res.holds for r in reports for _, res in r.claims)
    total = sum(len(r.claims) for r in reports)
    for r in reports:
        for c, res in r.claims:
            verdict = "holds" if res.holds else "DOES NOT HOLD"
            print(f"{r.name} {c.id}: {verdict}: ours {res.value} (band: {c.band})"
                  + (f" — {res.explanation}" if res.explanation else ""))
    print(f"{held}/{total} claims hold. Report: {path}", file=sys.stdout)
    return 0
