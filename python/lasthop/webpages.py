"""The eleven web pages of Manzoor et al. (WCNC 2019), Table II, as QUIC page loads.

The table gives, per page, the number of objects of each type (HTML, CSS, JS, image, other)
and the page's total size; the split of the total over the objects (per-type weights) is the
spec reader's (`crates/lasthop-sim/src/spec_in/pages.rs`), which the simulator and the live
HTTP/3 tool load too. This module is the Python view of it.
"""
from __future__ import annotations

from . import _native

_PAGES = {name: (counts, objects) for name, counts, objects in _native.spec_pages()}

# name: (html, css, js, image, other, total kB) — Table II (1 kB = 1000 bytes)
TABLE_II: dict[str, tuple[int, int, int, int, int, int]] = {n: c for n, (c, _) in _PAGES.items()}


def page_objects(name: str) -> list[int]:
    """Object sizes in bytes, HTML first, summing to the page's Table II size."""
    return list(_PAGES[name][1])
