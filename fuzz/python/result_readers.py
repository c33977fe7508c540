#!/usr/bin/env python3
"""Coverage-guided fuzzing of the result readers (atheris, libFuzzer for Python).

Bytes are written as a result file and read the way `lasthop table|plot|report|export` read
one: `analysis.load` (the reader, `results.load_result`, then the per-flow rows), the summary
`lasthop run` prints, and the aggregated table in every format. The property: whatever the
bytes, each step returns, or raises `UserError`/`ResultError` (one line naming the file) —
never another exception, which the command line would report as an internal error.

    python fuzz/python/result_readers.py fuzz/work/result_readers fuzz/corpus/result_readers \
        -max_total_time=3600            # a campaign (make fuzz-py FUZZ_TIME=3600)

`one_input` is the body; `tests/python/test_fuzz_corpus.py` replays the kept corpus through
it without atheris in `make test`.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

_DIR = tempfile.mkdtemp(prefix="lasthop-fuzz-results-")
atexit.register(shutil.rmtree, _DIR, ignore_errors=True)
_PATH = os.path.join(_DIR, "r.json")


def one_input(data: bytes) -> None:
    from lasthop import analysis
    from lasthop.errors import UserError
    from lasthop.results import ResultError
    from lasthop.summary import summarize

    with open(_PATH, "wb") as f:
        f.write(data)
    try:
        res = analysis.load(_PATH)
    except (UserError, ResultError) as e:
        assert "\n" not in str(e), f"a multi-line error: {e!r}"
        return
    for doc in res.docs.values():
        summarize(doc)
    by = analysis.default_by(res)
    for fmt in ("text", "csv", "markdown"):
        analysis.format_table(res, by, analysis.DEFAULT_TABLE_METRICS, fmt)


# Values a mutated leaf may take: every JSON type, edges of numbers, odd strings.
_ODD = [None, True, False, 0, -1, 1, 2**63, -(2**63) - 1, 10**400, 0.5, -0.0, 1e308, -1e308,
        "", "x", "tcp", "ping", "down", "cross", "NaN", "\u0000", [], [None], {}, {"": 1}]


def _paths(obj: object, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, prefix + (i,))
    return out


def mutate(data: bytes, max_size: int, seed: int) -> bytes:
    """Structure-aware: a result document with one to three of its values replaced (by any
    type), deleted or duplicated, and no checksum (so the readers get past it); bytes that do
    not parse as JSON go to libFuzzer's own mutations."""
    import copy
    import json
    import random

    import atheris

    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return atheris.Mutate(data, max_size)
    rng = random.Random(seed)
    if rng.random() < 0.2:
        return atheris.Mutate(data, max_size)
    if isinstance(doc, dict):
        doc.pop("checksum", None)
    for _ in range(rng.randint(1, 3)):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        path = rng.choice(paths)
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        last = path[-1]
        r = rng.random()
        if r < 0.6:
            parent[last] = copy.deepcopy(rng.choice(_ODD))
        elif r < 0.8 and isinstance(parent, dict):
            del parent[last]
        elif isinstance(parent, list):
            parent.insert(last, copy.deepcopy(parent[last]))
        else:
            parent[last] = [parent[last]]
    out = json.dumps(doc, separators=(",", ":")).encode()
    return out if len(out) <= max_size else atheris.Mutate(data, max_size)


def main() -> None:
    import atheris

    with atheris.instrument_imports(include=["lasthop"]):
        import lasthop.analysis  # noqa: F401
        import lasthop.results  # noqa: F401
        import lasthop.summary  # noqa: F401
        import lasthop.sweeps  # noqa: F401
    atheris.Setup(sys.argv, one_input, custom_mutator=mutate)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
