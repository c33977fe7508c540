"""Example tests for the hwsim VM harness (stdlib unittest; pytest runs them too).

    python3 -m unittest discover -s tests/vm -v      # or: python -m pytest tests/vm

Not part of `make test` (pyproject's testpaths is tests/python): the VM test
downloads ~115 MB of Debian packages on its first run and boots a VM.
"""

from __future__ import annotations

import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import nlmon_pcap  # noqa: E402
from hwsim_vm import available, last_run, run, script_output  # noqa: E402

REFERENCE = HERE.parent.parent / "reference" / "nl80211"


class ReferenceCaptures(unittest.TestCase):
    """The checked-in captures decode and hold what they should (no VM)."""

    def test_check(self) -> None:
        c = nlmon_pcap.check_dir(REFERENCE)
        self.assertEqual(c.failures, [], "\n".join(c.failures))

    def test_station_dump_values(self) -> None:
        msgs = nlmon_pcap.decode_file(REFERENCE / "station-dump.pcap")
        sta = [m for m in msgs if m.family == "nl80211" and m.cmd == nlmon_pcap.NL80211_CMD_NEW_STATION]
        info = sta[0].find(nlmon_pcap.NL80211_ATTR_STA_INFO)
        rate = info.find(nlmon_pcap.NL80211_STA_INFO_TX_BITRATE)
        self.assertEqual(rate.find(1).u(), 130)  # NL80211_RATE_INFO_BITRATE, 100 kbit/s units
        self.assertIn("tx bitrate:\t13.0 MBit/s", (REFERENCE / "station-dump.txt").read_text())


class HwsimVm(unittest.TestCase):
    """Boots the VM (skipped where it cannot run)."""

    @classmethod
    def setUpClass(cls) -> None:
        reason = available()
        if reason:
            raise unittest.SkipTest(reason)

    def test_station_associated(self) -> None:
        code, console = run("iw dev wlan0 station dump; ip netns exec sta iw dev wlan1 link", timeout=180)
        out = script_output(console)
        self.assertEqual(code, 0, console)
        self.assertIn("Station 02:00:00:00:01:00 (on wlan0)", out)
        self.assertIn("Connected to 02:00:00:00:00:00", out)
        self.assertGreater(last_run["boot_to_script_s"], 0)

    def test_exit_code_and_files(self) -> None:
        tool = HERE / "nlmon_pcap.py"  # any host file; here a text file we cat back
        code, console = run("head -1 /host/tool.py; exit 7", {"tool.py": tool}, wifi=False, timeout=120)
        self.assertEqual(code, 7, console)
        self.assertIn(tool.read_text().splitlines()[0], script_output(console))


if __name__ == "__main__":
    unittest.main()
