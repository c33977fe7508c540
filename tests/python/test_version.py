"""The code version identifies the code without git: a build without a clean git revision gets
a source identifier (native build id + Python sources), and the sweep cache key follows it."""
from __future__ import annotations

import shutil
from pathlib import Path

import lasthop._native as native
from lasthop.sweeps import run_key
from lasthop.version import code_version, elf_build_id, identify

PKG = Path(__file__).resolve().parents[2] / "python" / "lasthop"


def _copy_package(tmp_path: Path) -> Path:
    dst = tmp_path / "lasthop"
    shutil.copytree(PKG, dst, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    return dst


def test_a_clean_git_revision_is_the_version():
    assert identify("0.1.0+8162e0e", Path(native.__file__), PKG) == "0.1.0+8162e0e"
    assert code_version().startswith(str(native.version()))


def test_without_git_the_version_changes_with_the_python_sources(tmp_path):
    pkg = _copy_package(tmp_path)
    so = Path(native.__file__)
    a = identify("0.1.0+unknown", so, pkg)
    assert a.startswith("0.1.0+unknown.") and len(a.rsplit(".", 1)[1]) == 12
    assert identify("0.1.0+unknown", so, pkg) == a  # stable
    (pkg / "spec.py").write_text((pkg / "spec.py").read_text() + "\n# changed\n")
    b = identify("0.1.0+unknown", so, pkg)
    assert b != a
    # A dirty git tree is not an identity either.
    assert identify("0.1.0+8162e0e-dirty", so, pkg).startswith("0.1.0+8162e0e-dirty.")
    # The sweep cache key follows the version.
    spec = {"name": "x"}
    assert run_key(spec, 1, a) != run_key(spec, 1, b)


def test_without_git_the_version_changes_with_the_native_code(tmp_path):
    pkg = _copy_package(tmp_path)
    bid = elf_build_id(Path(native.__file__))
    assert bid is not None and len(bid) >= 16
    # Two native files with different contents (no ELF note: the whole file is hashed).
    one, two = tmp_path / "one.so", tmp_path / "two.so"
    one.write_bytes(b"native code 1")
    two.write_bytes(b"native code 2")
    assert elf_build_id(one) is None
    assert identify("0.1.0+unknown", one, pkg) != identify("0.1.0+unknown", two, pkg)
    # An ELF build id decides it without reading the rest of the file.
    elf = tmp_path / "native.so"
    data = bytearray(Path(native.__file__).read_bytes())
    i = data.find(bid)
    elf.write_bytes(bytes(data))
    v1 = identify("0.1.0+unknown", elf, pkg)
    data[i] ^= 0xFF
    elf.write_bytes(bytes(data))
    assert elf_build_id(elf) != bid and identify("0.1.0+unknown", elf, pkg) != v1


def test_workers_check_the_native_module_not_the_python_source_id():
    """A worker started after a Python source changed computes another source id; what it
    simulates is the native module's, so it runs (stamped with the driver's version) as long as
    that module is the driver's, and refuses otherwise."""
    import json

    import pytest

    import lasthop
    from lasthop.sweeps import _execute

    spec = lasthop.load_spec({"name": "w", "sim": {"duration": "50ms"}, "stations": [{"mcs": 5}],
                              "flows": [{"stations": 0, "pattern": "cbr", "rate": "1Mbps"}]})
    doc = json.loads(_execute(spec.to_json(), 1, "0.1.0+abc1234-dirty.0123456789ab", str(native.version())))
    assert doc["code_version"] == "0.1.0+abc1234-dirty.0123456789ab"
    with pytest.raises(RuntimeError, match="worker runs lasthop"):
        _execute(spec.to_json(), 1, code_version(), "0.0.0+other")
