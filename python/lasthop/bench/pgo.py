"""The training run of the profile-guided builds (`make build`, docs/architecture.md "Speed").

The native module is built once instrumented (`-Cprofile-generate`), then this runs the specs a
user starts from through it — every `lasthop new` template and the spec files given on the
command line (the Makefile gives `experiments/*.toml` without the emulator's) — each once with
its own seed, in process; the counts it leaves are merged and the module is built again with
them (`-Cprofile-use`). The standalone tools' binary is trained the same way on the same specs,
each run by the instrumented binary itself (`--binary PATH`: `PATH run SPEC --quiet`): a build of
the binary names its functions apart from the module's build (other crates and features are
linked), so the module's counts do not apply to it. The benchmark's own cells (`lasthop bench`,
`tcp_cells.py`) are not in the training set, so what the bench measures is a workload the
profile was not made on.

    python -m lasthop.bench.pgo [--binary PATH] [SPEC.toml ...]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from ..children import run_group
from ..errors import EXIT_OK, EXIT_USAGE
from ..new_cli import TEMPLATES, template_path
from ..spec import SpecError, SpecFileError, load_spec

__all__ = ["training_specs", "train"]


def training_specs(extra: list[str]) -> list[Path]:
    """The templates, then the files given, in that order."""
    return [template_path(name) for name in TEMPLATES] + [Path(p) for p in extra]


def train(paths: list[Path], out=sys.stdout, binary: Path | None = None) -> int:
    """Load every spec, then run each once: in this process, or as `binary run SPEC` (the
    standalone binary's own reader and run, into a directory removed afterwards). A spec that
    does not load stops it before anything runs, with one line per such spec and exit code 2 (a
    training set that silently shrank would leave the paths it covered unoptimized)."""
    from .. import _native

    specs, failed = [], False
    for p in paths:
        try:
            specs.append((p, load_spec(p)))
        except SpecFileError as e:  # its message names the file
            print(f"lasthop.bench.pgo: {e}", file=sys.stderr)
            failed = True
        except SpecError as e:
            print(f"lasthop.bench.pgo: {p}: {e}", file=sys.stderr)
            failed = True
    if failed:
        return EXIT_USAGE
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lasthop-pgo-") as tmp:
        for p, spec in specs:
            t0 = time.perf_counter()
            if binary is None:
                _native.run(spec.to_json(), spec.seed, None)
            else:
                run_group([str(binary), "run", str(p), "-o", tmp, "--quiet"])
            print(f"  trained on {p.name} ({time.perf_counter() - t0:.2f} s)", file=out)
    print(f"  {len(specs)} specs in {time.perf_counter() - t_all:.1f} s", file=out)
    return EXIT_OK


def main(argv: list[str]) -> int:
    """`[--binary PATH] [SPEC.toml ...]`: train the module, or the binary at PATH."""
    binary = None
    if argv[:1] == ["--binary"]:
        if len(argv) < 2 or not Path(argv[1]).is_file():
            got = repr(argv[1]) if len(argv) > 1 else "nothing"
            print(f"lasthop.bench.pgo: --binary: {got}: the path of an instrumented lasthop-live", file=sys.stderr)
            return EXIT_USAGE
        binary, argv = Path(argv[1]), argv[2:]
    return train(training_specs(argv), binary=binary)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
