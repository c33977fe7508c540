"""`lasthop reproduce`: the registry of suites (one module per paper, plus `phy-mac` and `l4s`).

See `framework.py` for what a suite declares and how it is run and reported.
"""
from __future__ import annotations

import importlib
from types import ModuleType

# command-line name -> module (relative to this package)
SUITES: dict[str, str] = {
    "phy-mac": ".phy_mac",
    "tcp-baselines": ".tcp_baselines",
    "queues": ".queues",
    "wqm": ".wqm",
    "bquic": ".bquic",
    "cwnd-history": ".cwnd_history",
    "vwire": ".vwire",
    "aggctl": ".aggctl",
    "l4s": ".l4s",
}


def names() -> list[str]:
    return list(SUITES)


def load(name: str) -> ModuleType:
    return importlib.import_module(SUITES[name], __name__)
