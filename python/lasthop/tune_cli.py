"""`lasthop tune SPEC`: the command line over `lasthop.tune` (docs/tune.md)."""
from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

from .sweep_cli import _positive

__all__ = ["add_parser", "cmd_tune"]


def add_parser(sub: Any) -> None:
    t = sub.add_parser("tune", help="search the AP's levers for the configuration that cuts the "
                                    "cell's latency under load (docs/tune.md)")
    t.add_argument("spec", metavar="SPEC", help="the cell: stations, rates and traffic (TOML)")
    t.add_argument("--budget", type=_positive("--budget"), default=32, metavar="N",
                   help="candidate configurations to try besides the cell's own (default 32)")
    t.add_argument("--seeds", type=_positive("--seeds"), default=3, metavar="K",
                   help="seeds per candidate (default 3)")
    t.add_argument("-j", "--jobs", type=_positive("-j"), default=None, metavar="N",
                   help="parallel runs (default: number of CPUs)")
    t.add_argument("--ray", default=None, metavar="ADDRESS",
                   help="run as Ray tasks on the cluster at ADDRESS, or 'local'")
    t.add_argument("-o", "--out", default=None, metavar="DIR",
                   help="output directory (default: results/<spec name>-tune); running again "
                        "resumes from the runs already there")
    t.add_argument("-q", "--quiet", action="store_true", help="no progress; print only DIR")


def _fmt(c: dict[str, Any]) -> str:
    share = c["worst_share"]
    return (f"ping p99 {c['latency_ms']:7.1f} ms, goodput {c['goodput_bps'] / 1e6:7.1f} Mb/s, worst download "
            f"{share * 100:5.1f} % of an equal share" if math.isfinite(share) else "")


def cmd_tune(args: Any) -> int:
    from .errors import UserError
    from .sweeps import SweepError, SweepInterrupted
    from .tune import TuneError, tune

    out = Path(args.out) if args.out else Path("results") / f"{Path(args.spec).stem}-tune"

    def progress(i: int, n: int, c: Any) -> None:
        if not args.quiet:
            tty = sys.stderr.isatty()
            lead = "\r" if tty else ""
            print(f"{lead}[{i}/{n}] {c.label()[:60]:60s} p99 {c.latency_ms:7.1f} ms",
                  end="\n" if i == n or not tty else "", file=sys.stderr, flush=True)

    try:
        rep = tune(args.spec, out, args.budget, args.seeds, jobs=args.jobs, ray=args.ray, progress=progress)
    except (TuneError, SweepError) as e:
        raise UserError(str(e)) from None
    except SweepInterrupted:
        print(f"lasthop: tune interrupted; run the same command again to resume ({out})", file=sys.stderr)
        return 130
    except RuntimeError as e:
        print(f"lasthop: simulation failed: {e}", file=sys.stderr)
        return 1
    _plot(rep, out / "tune.png")
    if args.quiet:
        print(out)
        return 0
    b, c = rep["baseline"], rep["chosen"]
    print(f"baseline: {_fmt(b)}")
    print(f"chosen:   {_fmt(c)}  ({c['latency_gain']:.2f}x lower p99)")
    print(f"          {', '.join(f'{k}={v}' for k, v in c['values'].items()) or '(the baseline itself)'}")
    if not c["meets_constraints"]:
        print("          no candidate kept >= 95 % of the baseline's goodput and every download >= 25 % of "
              "an equal share: this is the best latency per goodput on the Pareto set")
    print("ablation (the chosen configuration without one lever):")
    for r in rep["ablation"]:
        print(f"  without {r['without']:16s} {_fmt(r)}")
    print(f"Pareto set: {sum(x['pareto'] for x in rep['candidates'])} of {len(rep['candidates'])} candidates; "
          f"{out / 'tune.json'}, {out / 'tune.png'}")
    print(f"apply: {out / 'chosen.txt'} (hostapd.conf, AP host); rerun: lasthop run {out / 'chosen.toml'}")
    return 0


def _plot(rep: dict[str, Any], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cs = [c for c in rep["candidates"] if math.isfinite(c["latency_ms"])]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    sc = ax.scatter([c["latency_ms"] for c in cs], [c["goodput_bps"] / 1e6 for c in cs],
                    c=[c["worst_share"] if math.isfinite(c["worst_share"]) else 0 for c in cs],
                    cmap="viridis", vmin=0, vmax=1, s=[40 if c["pareto"] else 14 for c in cs],
                    edgecolors=["black" if c["pareto"] else "none" for c in cs])
    b, ch = rep["baseline"], rep["chosen"]
    ax.scatter([b["latency_ms"]], [b["goodput_bps"] / 1e6], marker="s", s=90, facecolors="none",
               edgecolors="#D55E00", label="baseline (the cell as written)")
    ax.scatter([ch["latency_ms"]], [ch["goodput_bps"] / 1e6], marker="*", s=200, color="#D55E00", label="chosen")
    ax.set_xscale("log")
    ax.set_xlabel("worst ping p99 (ms, log)")
    ax.set_ylabel("total goodput (Mb/s)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.colorbar(sc, ax=ax, label="worst station's download / equal share")
    ax.set_title("lasthop tune: candidates (outlined: Pareto set)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
