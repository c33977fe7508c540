"""Result files (docs/results.md): one self-describing JSON file per run.

The envelope carries the normalized spec, the seed, the code version and the simulator's
`data`. It is written deterministically (sorted keys, compact separators, floats by Python's
shortest round-trip repr, nothing from the wall clock or the host) and atomically: to a
temporary file in the destination directory, flushed and fsynced, then renamed over the final
name, so a result file is either complete or absent.
"""

from __future__ import annotations

import math
import json
import os
from pathlib import Path
TYPE_CHECKING = False  # typing's flag, without importing typing (a run's start-up)
if TYPE_CHECKING:
    from typing import Any, Iterable

from . import _native

FORMAT = "lasthop.result"
FORMAT_VERSION = 1

__all__ = ["FORMAT", "FORMAT_VERSION", "ResultError", "envelope", "dumps", "result_text",
           "result_path", "write_result", "write_result_text", "load_result"]


class ResultError(Exception):
    """A result file is missing, unreadable or not a lasthop result."""


def envelope(spec: dict[str, Any], seed: int, data: dict[str, Any], code_version: str
             ) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "code_version": code_version,
        "seed": seed,
        "spec": spec,
        "data": data,
    }


def _canonical(doc: dict[str, Any]) -> str:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)


def _digest(parts: list[str]) -> str:
    """`sha256:<hex>` of the text `parts` make together."""
    return "sha256:" + _native.sha256_hex(parts)


def _head(checksum: str) -> str:
    """The start of a sealed text, up to its body's first member: the checksum comes first,
    where `sort_keys` puts it."""
    return '{"checksum":"' + checksum + '",'


def content_checksum(doc: dict[str, Any]) -> str:
    """`sha256:<hex>` of the canonical text of `doc` without its own `checksum` field."""
    body = {k: v for k, v in doc.items() if k != "checksum"}
    return _digest([_canonical(body)])


def _seal(body_text: str) -> str:
    """The canonical text of a document whose other keys all sort after "checksum", given the
    canonical text of those keys (`body_text`, an object): the checksum is inserted first,
    where `sort_keys` puts it, so the document is serialized once, not twice."""
    ck = _digest([body_text])
    return (_head(ck) + body_text[1:] if body_text != "{}" else _head(ck)[:-1] + "}") + "\n"


def _sealed_as_written(text: str, checksum: Any) -> bool:
    """Whether `text` (a file's) is the sealed text `_seal` writes with `checksum`, and that
    checksum is its content's: the content's canonical text is then the file's own, so a
    reader need not serialize the parsed document again to verify it. False for any other
    text (a file reformatted or edited since), which is verified the long way."""
    if not isinstance(checksum, str):
        return False
    head = _head(checksum)
    if not (text.startswith(head) and text.endswith("}\n")):
        return False
    return _digest(["{", text[len(head):-1]]) == checksum


def dumps(doc: dict[str, Any]) -> str:
    """Canonical text of a result document (ends with a newline), sealed with the checksum of
    its content (`checksum`), which readers verify."""
    body = {k: v for k, v in doc.items() if k != "checksum"}
    if all(k > "checksum" for k in body):
        return _seal(_canonical(body))
    return _canonical({**body, "checksum": content_checksum(body)}) + "\n"


def _result_parts(spec_text: str, seed: int, data_text: str, code_version: str) -> list[str]:
    """The canonical text of an envelope's content (no checksum), in pieces."""
    return ['{"code_version":' + json.dumps(code_version) + ',"data":', data_text,
            ',"format":' + json.dumps(FORMAT) + ',"format_version":' + str(int(FORMAT_VERSION))
            + ',"seed":' + str(int(seed)) + ',"spec":', spec_text, "}"]


def _sealed_parts(parts: list[str]) -> list[str]:
    return [_head(_digest(parts)) + parts[0][1:], *parts[1:], "\n"]


def result_text(spec_text: str, seed: int, data_text: str, code_version: str) -> str:
    """`dumps(envelope(spec, seed, data, code_version))` from the canonical texts of the spec
    (`Spec.to_json()`) and of the data (what the simulator returns), without parsing either:
    byte for byte the same file (tests/python/test_results_text.py)."""
    return "".join(_sealed_parts(_result_parts(spec_text, seed, data_text, code_version)))


def write_result_text(path: str | Path, spec_text: str, seed: int, data_text: str,
                      code_version: str) -> Path:
    """Write `result_text(...)` to `path` atomically, piece by piece (a large result is not
    joined into one more copy of itself in memory)."""
    parts = _sealed_parts(_result_parts(spec_text, seed, data_text, code_version))
    return write_atomic(path, (p.encode("ascii") for p in parts))


def file_sha256(path: str | Path) -> str:
    """`sha256:<hex>` of a file's bytes."""
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def result_path(out_dir: str | Path, name: str, seed: int) -> Path:
    return Path(out_dir) / f"{name}-s{seed}.json"


def write_atomic(path: str | Path, data: bytes | Iterable[bytes]) -> Path:
    """Write `data` (bytes, or pieces of it) to `path` so that the file is either complete or
    absent: a temporary file in the same directory, flushed to disk, then renamed over `path`.
    The parent must exist."""
    path = Path(path)
    fd, tmp = _temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in ([data] if isinstance(data, (bytes, bytearray, memoryview)) else data):
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def _temp_beside(path: Path) -> tuple[int, str]:
    """A new file `.<name>.<random>.tmp` next to `path`, opened for writing, owner-only (as
    `tempfile.mkstemp`, without importing `tempfile` and `random` on every run)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = os.path.join(path.parent, f".{path.name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{path.parent}: no free temporary name")


def unwritable_dir(d: str | Path, what: str = "output directory") -> str | None:
    """Why results could not be written into directory `d` (created if missing), or None."""
    d = Path(d)
    if d.exists():
        if not d.is_dir():
            return f"{what} {str(d)!r} exists and is not a directory"
        if not os.access(d, os.W_OK | os.X_OK):
            return f"{what} {str(d)!r} is not writable"
        return _probe_dir(d, what)
    parent = d.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        return f"cannot create {what} {str(d)!r}: {str(parent)!r} is not a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot create {what} {str(d)!r}: {str(parent)!r} is not writable"
    return _probe_dir(d, what)


def _probe_dir(d: Path, what: str) -> str | None:
    """Create `d` (and missing parents) and a file in it, then remove all of it again: the
    permission bits do not tell everything (root, read-only mounts, /proc)."""
    created: list[Path] = []
    try:
        p = d.absolute()
        missing = []
        while not p.exists():
            missing.append(p)
            p = p.parent
        for m in reversed(missing):
            m.mkdir()
            created.append(m)
        fd, tmp = _temp_beside(d / ".lasthop-probe")
        os.close(fd)
        os.unlink(tmp)
        return None
    except OSError as e:
        return f"cannot write into {what} {str(d)!r}: {e.strerror or e}"
    finally:
        for m in reversed(created):
            try:
                m.rmdir()
            except OSError:
                pass


def write_result(path: str | Path, doc: dict[str, Any]) -> Path:
    """Write `doc` to `path` atomically. The parent directory must exist."""
    text = dumps(doc)  # serialize first: a bad document never creates a file
    return write_atomic(path, text.encode("ascii"))


def load_result(path: str | Path) -> dict[str, Any]:
    """Read and sanity-check a result file."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        doc = json.loads(text)
    except FileNotFoundError:
        raise ResultError(f"{path}: no such file") from None
    except (OSError, ValueError) as e:
        raise ResultError(f"{path}: not a readable JSON file: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ResultError(f"{path}: not a lasthop result file")
    if doc.get("format_version") != FORMAT_VERSION:
        raise ResultError(f"{path}: result format_version {doc.get('format_version')!r}; "
                          f"this lasthop reads {FORMAT_VERSION}")
    for key in ("code_version", "seed", "spec", "data"):
        if key not in doc:
            raise ResultError(f"{path}: incomplete result: no {key!r}")
    if "checksum" in doc and not (_sealed_as_written(text, doc["checksum"])
                                  or doc["checksum"] == content_checksum(doc)):
        raise ResultError(f"{path}: changed after it was written (its content does not match "
                          "its checksum)")
    problem = shape_problem(doc)
    if problem:
        raise ResultError(f"{path}: not a lasthop result file: {problem}")
    return doc


# The containers the readers (summary, tables, plots, exports) walk, as docs/results.md lays
# them out: a dict stands for an object whose listed members, where present, have the shapes
# given; `[X]` for an array of elements shaped X; `list`, `str`, `int` for any array, text,
# integer. Members not listed are not checked (readers take numbers with a check of their own).
_SHAPE: dict[str, Any] = {
    "code_version": str,
    "seed": int,
    "spec": {"name": str,
             "sim": {"duration_ns": int, "warmup_ns": int, "bin_ns": int, "seed": int},
             "phy": {}, "mac": {}, "ap": {}, "wired": {},
             "stations": [{}], "flows": [{"pattern": str, "direction": str, "cc": str,
                                          "ac": str}]},
    "data": {"stats": {}, "channel": {}, "warnings": list, "timeseries": {},
             "stations": [{"id": int, "ampdu_hist_down": list, "ampdu_hist_up": list}],
             "flows": [{"id": int, "station": int, "delivered_packets": int,
                        "direction": str, "pattern": str,
                        "delay_ns": {"samples": int, "cdf_ns": list},
                        "tcp": {"cc": str, "state": str, "bytes": int, "completion_ns": int,
                                "app_bytes_delivered": int, "requests_completed": int,
                                "response_time_ns": {}},
                        "quic": {}, "series": {}}],
             "nodes": [{}]},
}


def number(v: Any) -> float | None:
    """`v` as a finite float if it is a JSON number (not a boolean), else None: how readers
    take a result's numbers (a hand-made file may hold anything there)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:  # an integer beyond any float
        return None
    return f if math.isfinite(f) else None


def shape_problem(doc: Any, shape: Any = None, where: str = "") -> str | None:
    """The first member of `doc` not shaped as the readers expect (`_SHAPE`), as
    "KEY: expected …", or None."""
    shape = _SHAPE if shape is None else shape
    if isinstance(shape, dict):
        if not isinstance(doc, dict):
            return f"{where or 'the document'}: expected an object"
        for k, sub in shape.items():
            if k in doc and doc[k] is not None:
                p = shape_problem(doc[k], sub, f"{where}.{k}" if where else k)
                if p:
                    return p
        return None
    if isinstance(shape, list):
        if not isinstance(doc, list):
            return f"{where}: expected an array"
        for i, item in enumerate(doc):
            p = shape_problem(item, shape[0], f"{where}[{i}]")
            if p:
                return p
        return None
    if shape is int:
        # The simulator's integers are 64-bit (counters and times are u64).
        ok = isinstance(doc, int) and not isinstance(doc, bool) and -(1 << 63) <= doc < (1 << 64)
    else:
        ok = isinstance(doc, shape)
    names = {str: "text", int: "a 64-bit integer", list: "an array"}
    return None if ok else f"{where}: expected {names[shape]}"
