"""Shared fixtures for the Python tests (run them with `make test`, or `make test-python`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import STUB_MESSAGE, TINY_SPEC


# Tests that measure on the wall clock (the emulator, the live tools, the VM) or hold
# machine-wide resources (a Ray cluster's ports, process groups and signals): `make test` runs
# them alone after the rest, which runs on every core (pytest-xdist).
SERIAL_FILES = frozenset({
    "test_aggctl_live.py", "test_emu.py", "test_hwsim.py", "test_l4s_vm.py", "test_live.py", "test_quic_live.py",
    "test_vwire.py", "test_ray_cluster.py", "test_sweep.py", "test_hostile_input.py",
})


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "serial: measured on the wall clock or machine-wide; run alone")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in SERIAL_FILES:
            item.add_marker(pytest.mark.serial)


@pytest.fixture(scope="session")
def simulator() -> None:
    """Skip tests that need the real simulator while `_native.run` is the stub."""
    from lasthop import _native
    from lasthop.spec import load_spec_text

    spec = load_spec_text(TINY_SPEC, "tiny.toml", native=False)
    try:
        _native.run(spec.to_json(), 1, None)
    except RuntimeError as e:
        if STUB_MESSAGE in str(e):
            pytest.skip(f"_native.run is the stub ({STUB_MESSAGE!r}); these tests switch on "
                        "when the simulator lands")
        raise


@pytest.fixture
def tiny_spec(tmp_path: Path) -> Path:
    p = tmp_path / "tiny.toml"
    p.write_text(TINY_SPEC)
    return p
