"""The eleven web pages of Manzoor et al. (WCNC 2019), Table II, as QUIC page loads.

The table gives, per page, the number of objects of each type (HTML, CSS, JS, image, other)
and the page's total size; it does not give object sizes. We split the total over the objects
by fixed per-type weights — HTML 3, CSS 2, JS 4, image 2, other 1 — (our choice: scripts are the
largest text resources and images the most numerous on typical landing pages; any split keeps
the object count and the total, which drive the load time), in whole bytes, the rounding
remainder going to the first HTML object. The first object (the page's HTML) is requested
alone; the rest once it has arrived (see `world_quic.rs`).
"""
from __future__ import annotations

# name: (html, css, js, image, other, total kB) — Table II (1 kB = 1000 bytes)
TABLE_II: dict[str, tuple[int, int, int, int, int, int]] = {
    "google": (2, 1, 3, 5, 1, 56),
    "live": (2, 2, 2, 2, 0, 262),
    "twitter": (6, 1, 4, 2, 3, 421),
    "wikipedia": (1, 1, 2, 20, 1, 441),
    "reddit": (4, 2, 5, 26, 2, 470),
    "yahoo": (16, 13, 5, 48, 4, 839),
    "ebay": (4, 1, 6, 3, 14, 985),
    "instagram": (3, 1, 7, 25, 1, 1409),
    "youtube": (8, 3, 5, 113, 20, 2911),
    "facebook": (1, 1, 8, 123, 1, 3560),
    "amazon": (5, 2, 14, 41, 2, 3723),
}
WEIGHTS = (3, 2, 4, 2, 1)  # html, css, js, image, other


def page_objects(name: str) -> list[int]:
    """Object sizes in bytes, HTML first, summing to the page's Table II size."""
    *counts, total_kb = TABLE_II[name]
    kinds = [k for k, n in enumerate(counts) for _ in range(n)]
    kinds.sort(key=lambda k: k != 0)  # an HTML object first (stable: keeps type order otherwise)
    total = total_kb * 1000
    wsum = sum(WEIGHTS[k] for k in kinds)
    sizes = [total * WEIGHTS[k] // wsum for k in kinds]
    sizes[0] += total - sum(sizes)
    return sizes
