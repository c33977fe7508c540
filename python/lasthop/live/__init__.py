"""The live side: the emulator's command line and benches, the live tools' command line
(`lasthop <tool>` runs the standalone `lasthop-live`), their benches across the emulator, the
applications they run in namespaces, the proxy load generator and the soak (docs/live.md,
docs/emu.md)."""
