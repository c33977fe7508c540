"""Shared fixtures for the Python tests (run them with `make test`, or `make test-python`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import STUB_MESSAGE, TINY_SPEC


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
