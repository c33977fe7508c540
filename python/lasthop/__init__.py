"""lasthop: a fast, deterministic simulator of the 802.11 (WiFi) last hop.

The command line is `lasthop` (see `lasthop.cli`); specs are TOML (docs/spec.md) and results
are JSON files (docs/results.md). The simulation itself runs in the native module
`lasthop._native`, built from the Rust workspace.
"""

__version__ = "0.1.0"  # keep equal to [workspace.package] version in Cargo.toml

__all__ = ["__version__"]
