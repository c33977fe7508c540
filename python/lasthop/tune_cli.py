"""`lasthop tune SPEC`: the command line over `lasthop.tune` (docs/tune.md)."""
from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

from .sweep_cli import _positive
from .units import share_fraction

__all__ = ["add_parser", "cmd_tune"]

# Seeds of the confirmation run by default.
CONFIRM_SEEDS = 10
# Candidates rerun over the confirmation's seeds before the choice, by default (`tune`'s
# `finalists`).
FINALISTS = 4


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
    t.add_argument("--confirm", type=int, default=None, metavar="K",
                   help="run the baseline and the choice again over K seeds (more than --seeds; "
                        f"0: none) and report the gain and floors there (default {CONFIRM_SEEDS}, "
                        "when that is more than --seeds)")
    t.add_argument("--finalists", type=_positive("--finalists"), default=None, metavar="K",
                   help="with a confirmation: the K best candidates run again over its seeds and "
                        "the choice is the best of them there (default %d; 1: the search's own "
                        "choice); the confirmation then runs on as many held-out seeds" % FINALISTS)
    t.add_argument("--ignore-uploads", action="store_true",
                   help="leave the uploads out of the stations' shares and their floor (the "
                        "downloads alone, over an equal share of theirs)")
    t.add_argument("--upload-floor", type=share_fraction, default=None, metavar="F",
                   help="hold every upload to F of an equal share (default: the downloads' floor; "
                        "0: none, the uploads still counted in the equal share): what the uploads "
                        "give up for every download to keep its floor")
    t.add_argument("-q", "--quiet", action="store_true", help="no progress; print only DIR")


def _floors(rep: dict[str, Any]) -> str:
    """The share floors a report's choice is held to, in words."""
    down, up = rep["share_floor"], rep.get("upload_floor")
    if not rep["uploads_in_share"]:
        return f"every download >= {down:.0%} of an equal share"
    if up is None or up == down:
        return f"every download and upload >= {down:.0%} of an equal share"
    return f"every download >= {down:.0%} and every upload >= {up:.0%} of an equal share"


def _fmt(c: dict[str, Any]) -> str:
    pct = lambda x: f"{x * 100:5.1f} %" if math.isfinite(x) else "    -  "  # noqa: E731
    return (f"ping p99 {c['latency_ms']:7.1f} ms, goodput {c['goodput_bps'] / 1e6:7.1f} Mb/s "
            f"(down {c['down_bps'] / 1e6:6.1f}, up {c['up_bps'] / 1e6:6.1f}), worst download {pct(c['worst_down_share'])}, "
            f"upload {pct(c['worst_up_share'])} of an equal share (download {pct(c['worst_down_own_share'])} of the "
            "downloads')")


def cmd_tune(args: Any) -> int:
    from .errors import UserError
    from .sweeps import SweepError, SweepInterrupted
    from .tune import TuneError, tune

    out = Path(args.out) if args.out else Path("results") / f"{Path(args.spec).stem}-tune"

    tty = sys.stderr.isatty()

    def progress(i: int, n: int, c: Any, phase: str = "") -> None:
        if not args.quiet:
            lead = "\r" if tty else ""
            print(f"{lead}[{phase} {i}/{n}] {c.label()[:60]:60s} p99 {c.latency_ms:7.1f} ms",
                  end="\n" if i == n or not tty else "", file=sys.stderr, flush=True)

    if args.confirm is None:
        confirm = CONFIRM_SEEDS if CONFIRM_SEEDS > args.seeds else 0
    elif args.confirm < 0:
        raise UserError(f"--confirm {args.confirm}: a number of seeds >= 0")
    else:
        confirm = args.confirm
    if args.finalists is not None and not confirm:
        raise UserError(f"--finalists {args.finalists}: needs a confirmation (--confirm more than --seeds)")
    try:
        rep = tune(args.spec, out, args.budget, args.seeds, jobs=args.jobs, ray=args.ray, progress=progress,
                   uploads=not args.ignore_uploads, confirm=confirm,
                   finalists=args.finalists or FINALISTS, up_floor=args.upload_floor)
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
        print(f"          no candidate kept >= {rep['goodput_keep']:.0%} of the baseline's goodput and "
              f"{_floors(rep)}: this is the one nearest those floors")
    if rep.get("finalists"):
        fs = rep["finalists"]
        keep = sum(f["meets_constraints"] for f in fs)
        print(f"finalists: the {len(fs)} best on {rep['seeds']} seeds, run over {rep['confirmed']['seeds']}; "
              f"{keep} kept the floors there; the choice is the best of them")
    if "confirmed" in rep:
        k = rep["confirmed"]
        keeps = "keeps the floors" if k["meets_constraints"] else "MISSES a floor"
        last = k["first_seed"] + k["seeds"] - 1
        print(f"confirmed on {k['seeds']} held-out seeds ({k['first_seed']}…{last}): baseline "
              f"{k['baseline']['latency_ms']:.1f} ms, chosen {k['chosen']['latency_ms']:.1f} ms "
              f"({k['latency_gain']:.2f}x lower p99); the choice {keeps} there")
    print("ablation (the chosen configuration without one lever):")
    for r in rep["ablation"]:
        print(f"  without {r['without']:16s} {_fmt(r)}")
    print(f"Pareto set: {sum(x['pareto'] for x in rep['candidates'])} of {len(rep['candidates'])} candidates; "
          f"{out / 'tune.json'}, {out / 'tune.png'}")
    print(f"apply: {out / 'chosen.txt'} (hostapd.conf, AP host); rerun: lasthop run {out / 'chosen.toml'}")
    return 0


def _plot(rep: dict[str, Any], path: Path) -> None:
    """Candidates by worst ping p99 and goodput: those keeping the floors coloured by their worst
    share, the others grey; the goodput floor dashed; the Pareto set outlined."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    b, ch = rep["baseline"], rep["chosen"]
    floor_bps = rep["goodput_keep"] * b["goodput_bps"]
    share = lambda c: c["worst_share"] if math.isfinite(c["worst_share"]) else 0.0  # noqa: E731
    held = lambda c: c["floor_share"] if math.isfinite(c["floor_share"]) else 0.0  # noqa: E731
    cs = [c for c in rep["candidates"] if math.isfinite(c["latency_ms"])]
    keeps = [c for c in cs if c["goodput_bps"] >= floor_bps and held(c) >= rep["share_floor"]]
    misses = [c for c in cs if c not in keeps]
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    xy = lambda xs: ([c["latency_ms"] for c in xs], [c["goodput_bps"] / 1e6 for c in xs])  # noqa: E731
    edge = lambda xs: ["black" if c["pareto"] else "none" for c in xs]  # noqa: E731
    size = lambda xs: [40 if c["pareto"] else 14 for c in xs]  # noqa: E731
    ax.scatter(*xy(misses), color="#BBBBBB", s=size(misses), edgecolors=edge(misses),
               label=f"misses a floor ({len(misses)})")
    vmax = max([0.5] + [share(c) for c in keeps])
    up = rep.get("upload_floor")
    vmin = min(rep["share_floor"], rep["share_floor"] if up is None else up)
    sc = ax.scatter(*xy(keeps), c=[share(c) for c in keeps], cmap="viridis", vmin=vmin, vmax=vmax,
                    s=size(keeps), edgecolors=edge(keeps), label=f"keeps the floors ({len(keeps)})")
    ax.axhline(floor_bps / 1e6, color="#555555", ls="--", lw=0.8)
    ax.annotate(f"goodput floor ({rep['goodput_keep']:.0%} of the baseline's)", (0.01, floor_bps / 1e6),
                xycoords=("axes fraction", "data"), fontsize=7, color="#555555", va="bottom")
    ax.scatter([b["latency_ms"]], [b["goodput_bps"] / 1e6], marker="s", s=90, facecolors="none",
               edgecolors="#D55E00", label="baseline (the cell as written)")
    ax.scatter([ch["latency_ms"]], [ch["goodput_bps"] / 1e6], marker="*", s=200, color="#D55E00",
               label="chosen" + ("" if ch["meets_constraints"] else " (nearest the floors)"))
    ax.set_xscale("log")
    ax.set_xlabel("worst ping p99 (ms, log)")
    ax.set_ylabel("total goodput (Mb/s)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    what = "download or upload" if rep["uploads_in_share"] else "download"
    fig.colorbar(sc, ax=ax, label=f"worst station's {what} / equal share")
    ax.set_title("lasthop tune: candidates (outlined: Pareto set)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
