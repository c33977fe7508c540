"""Spec parsing, defaults, expansion and error paths (in-process; the CLI is in test_cli.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lasthop.spec import SpecError, SpecFileError, load_spec, load_spec_text

from helpers import ROOT

MINIMAL = """
[sim]
duration = "2s"
[[stations]]
mcs = 9
"""


def norm(text: str, native: bool = False):
    return load_spec_text(text, "t.toml", "t", native=native)


def err(text: str) -> SpecError:
    with pytest.raises(SpecError) as info:
        norm(text)
    return info.value


def test_defaults_filled():
    s = norm(MINIMAL).normalized
    assert s == {
        "name": "t", "description": "",
        "sim": {"duration_ns": 2_000_000_000, "warmup_ns": 0, "seed": 1, "bin_ns": 100_000_000},
        "phy": {"standard": "vht", "band": "5GHz", "channel_width": 80, "guard_interval": 800,
                "control_rate_bps": 24_000_000},
        "mac": {"aggregation": True, "max_ampdu_mpdus": 64, "max_ampdu_bytes": 0,
                "max_ppdu_time_ns": 5_484_000, "retry_limit": 7,
                "beacon_interval_ns": 102_400_000, "access_category": "BE",
                "cw_min": None, "cw_max": None, "aifsn": None, "txop_limit_ns": None,
                "eifs_after_collision": False, "aggregation_min_rate_bps": 0,
                "max_amsdu_bytes": 0, "rx_delivery": "subframe"},
        "ap": {"queue_limit": 1000, "scheduler": "round_robin", "qdisc": "fifo",
               "driver": "pull", "hw_queue_limit": 1024, "aql": True,
               "aql_limit_low_ns": 5_000_000, "aql_limit_high_ns": 12_000_000,
               "aql_threshold_ns": 24_000_000, "buffer_sizer": "none",
               "wqm_limit_ns": 2_500_000, "wqm_interval_ns": 100_000_000,
               "wqm_variant": "aimd", "pie_estimator": "timestamp",
               "dequeue_cost_ns": 0, "ecn": None, "ce_threshold_ns": 0,
               "ce_threshold_l4s_only": False, "air_ce_threshold_ns": 0, "ack_filter": "off",
               "cw_min": None, "cw_max": None, "aifsn": None, "txop_limit_ns": None},
        "wired": {"rate_bps": 10_000_000_000, "delay_ns": 1_000_000, "queue_limit": 1000,
                  "loss": 0.0, "loss_up": None, "qdisc": "fifo"},
        "channel": {"path_loss": "log_distance", "exponent": 3.5, "tx_power_dbm": 20.0,
                    "noise_figure_db": 7.0},
        "stations": [{"mcs": 9, "nss": 1, "error_model": "none", "per": 0.0, "snr_db": 30.0,
                      "queue_limit": 1000, "qdisc": "fifo", "rate_control": "fixed",
                      "waypoints": [], "repeat": False, "parent": None, "hop_channel": 0,
                      "nss_change": None}],
        "flows": [],
        "aggctl": {"target_aggregation": 32, "interval_ns": 500_000_000, "k0": 1.0,
                   "initial_rate_bps": 10_000_000, "min_rate_bps": 1_000_000,
                   "max_rate_bps": 10_000_000_000, "allocation": "equal_airtime",
                   "hold_time_ns": 1_000_000_000, "decay_after_ns": 2_000_000_000,
                   "decay_factor": 0.5, "gap_threshold_ns": 50_000,
                   "clock_resolution_ns": 1_000, "clock_jitter_ns": 0, "report_rate": True,
                   "report_loss": 0.0, "report_blackout_ns": None},
    }


def test_normalized_json_is_canonical():
    a = norm(MINIMAL).to_json()
    assert a == norm("\n\n" + MINIMAL).to_json()
    assert " " not in a and a.startswith('{"aggctl":')


def test_standard_dependent_defaults():
    s = norm('[sim]\nduration="1s"\n[phy]\nstandard="ofdm"\n[[stations]]\nmcs=7\n').normalized
    assert s["phy"]["channel_width"] == 20 and s["mac"]["aggregation"] is False
    s = norm('[sim]\nduration="1s"\n[phy]\nstandard="ht"\n[[stations]]\nmcs=7\n').normalized
    assert s["phy"]["channel_width"] == 20 and s["mac"]["aggregation"] is True


def test_short_duration_shrinks_default_bin():
    assert norm('[sim]\nduration="20ms"\n[[stations]]\nmcs=9\n').normalized["sim"]["bin_ns"] \
        == 20_000_000


def test_station_groups_and_flows_expand():
    s = norm("""
[sim]
duration = "1s"
[[stations]]
count = 3
mcs = 9
[[stations]]
mcs = 4
nss = 2
error_model = "snr"
snr_db = 12
[[flows]]
rate = "10Mbps"
[[flows]]
stations = [3, 1]
direction = "up"
pattern = "poisson"
rate = "1.5Mbps"
start = "100ms"
[[flows]]
stations = 2
pattern = "saturated"
""")
    n = s.normalized
    assert [st["mcs"] for st in n["stations"]] == [9, 9, 9, 4]
    assert n["stations"][3] == {"mcs": 4, "nss": 2, "error_model": "snr", "per": 0.0,
                                "snr_db": 12.0, "queue_limit": 1000, "qdisc": "fifo",
                                "rate_control": "fixed", "waypoints": [], "repeat": False,
                                "parent": None, "hop_channel": 0, "nss_change": None}
    assert s.station_group == [0, 0, 0, 1]
    assert [f["station"] for f in n["flows"]] == [0, 1, 2, 3, 3, 1, 2]
    assert s.flow_table == [0, 0, 0, 0, 1, 1, 2]
    assert n["flows"][4] == {"station": 3, "direction": "up", "pattern": "poisson",
                             "rate_bps": 1_500_000, "packet_size": 1500,
                             "start_ns": 100_000_000, "stop_ns": 1_000_000_000,
                             # TCP keys are present, at their defaults, on every normalized flow
                             "cc": "cubic", "ecn": "off", "bytes": 0, "pacing": None, "hystart": "linux",
                             "extra_acked": True, "app": "bulk", "request_bytes": 0,
                             "response_bytes": 0, "think_time_ns": 0, "requests": 0,
                             "profile": "quic", "ack_policy": None, "zero_rtt": False,
                             "initial_cwnd": 10, "objects": [], "connections": 1, "idle_ns": 0,
                             "idle_timeout_ns": 30_000_000_000, "reconnect": "1rtt",
                             "history": "none", "history_guard": "none"}
    assert n["flows"][6]["rate_bps"] == 0 and n["flows"][6]["pattern"] == "saturated"
    assert s.map_path("stations[2].mcs") == "stations[0].mcs"
    assert s.map_path("stations[3].nss") == "stations[1].nss"
    assert s.map_path("flows[5].rate") == "flows[1].rate"
    assert s.map_path("mac.aifsn") == "mac.aifsn"
    assert s.map_path("stations[99].mcs") == "stations[99].mcs"


def test_name_defaults_to_file_stem(tmp_path: Path):
    p = tmp_path / "my scenario.toml"
    p.write_text(MINIMAL)
    assert load_spec(p, native=False).name == "my_scenario"


def test_integers_accepted_for_floats_but_not_bools():
    s = norm('[sim]\nduration="1s"\n[wired]\nloss=0\n[[stations]]\nmcs=9\n').normalized
    assert s["wired"]["loss"] == 0.0 and isinstance(s["wired"]["loss"], float)
    e = err('[sim]\nduration="1s"\n[wired]\nloss=false\n[[stations]]\nmcs=9\n')
    assert e.path == "wired.loss" and e.value == "false"


@pytest.mark.parametrize("text,path,fragment", [
    ('[sim]\nduration="1s"\n[mac]\nagregation=true\n[[stations]]\nmcs=9\n',
     "mac.agregation", 'did you mean "aggregation"'),
    ('[simm]\nduration="1s"\n[[stations]]\nmcs=9\n', "simm", 'did you mean "sim"'),
    ('[sim]\nduration="1s"\n[[station]]\nmcs=9\n', "station", 'did you mean "stations"'),
    ('[sim]\nduration="1s"\nzzz=1\n[[stations]]\nmcs=9\n', "sim.zzz", "allowed: duration"),
    ('[sim]\nduration=10\n[[stations]]\nmcs=9\n', "sim.duration", "units are mandatory"),
    ('[sim]\nduration="0s"\n[[stations]]\nmcs=9\n', "sim.duration", "> 0"),
    ('[sim]\nduration="1s"\nbin="2s"\n[[stations]]\nmcs=9\n', "sim.bin", "<= sim.duration"),
    ('[sim]\nduration="100s"\nbin="1us"\n[[stations]]\nmcs=9\n', "sim.bin", "bins"),
    ('[sim]\nduration="1s"\nseed=-1\n[[stations]]\nmcs=9\n', "sim.seed", "0..="),
    ('[sim]\nduration="1s"\n[mac]\ncw_min=16\n[[stations]]\nmcs=9\n', "mac.cw_min", "2^k - 1"),
    ('[sim]\nduration="1s"\n[mac]\ncw_min=31\ncw_max=15\n[[stations]]\nmcs=9\n', "mac.cw_min",
     "cw_max"),
    ('[sim]\nduration="1s"\n[[stations]]\nmcs=9\nnss=9\n', "stations[0].nss", "1..=8"),
    ('[sim]\nduration="1s"\n[[stations]]\nmcs=9\nerror_model="snr"\nsnr_db=200\n',
     "stations[0].snr_db", "[-20, 100]"),
    ('[sim]\nduration="1s"\n[[stations]]\nmcs=9\nsnr_db=20\n', "stations[0].snr_db",
     'error_model = "snr"'),
    ('[sim]\nduration="1s"\n[[stations]]\nmcs=9\n[[flows]]\nstations=[0,0]\nrate="1Mbps"\n',
     "flows[0].stations", "distinct"),
    ('[sim]\nduration="1s"\n[[stations]]\nmcs=9\n[[flows]]\nstations="some"\nrate="1Mbps"\n',
     "flows[0].stations", '"all"'),
    ('[sim]\nduration="1s"\n[[stations]]\nnss=1\n', "stations[0].mcs", "required"),
    ('[sim]\nduration="1s"\n[[stations]]\ncount=0\nmcs=9\n', "stations[0].count", "1..="),
    ('[sim]\nduration="1s"\nstations=[]\n', "sim.stations", "unknown key"),
    ('[sim]\nduration="1s"\n[ap]\nscheduler="fifo"\n[[stations]]\nmcs=9\n', "ap.scheduler",
     '"round_robin"'),
])
def test_errors(text, path, fragment):
    e = err(text)
    assert e.path == path
    assert fragment in str(e)
    assert str(e).startswith(f"{path} = ")


def test_error_value_is_shown_in_toml_syntax():
    e = err('[sim]\nduration="1s"\n[phy]\nstandard="vhtt"\n[[stations]]\nmcs=9\n')
    assert str(e) == 'phy.standard = "vhtt": one of "ofdm"|"ht"|"vht"|"he"'


def test_missing_and_directory(tmp_path: Path):
    with pytest.raises(SpecFileError, match="no such file"):
        load_spec(tmp_path / "nope.toml")
    with pytest.raises(SpecFileError, match="directory"):
        load_spec(tmp_path)


def test_toml_error_has_line_number():
    with pytest.raises(SpecFileError, match="line 3"):
        load_spec_text('[sim]\nduration="1s"\nx = = 1\n', "x.toml")


class _FakeNative:
    def __init__(self, problems):
        self.problems = problems

    def validate(self, _json):
        return self.problems


def test_native_problem_paths_map_back_to_toml_groups(monkeypatch):
    import lasthop
    from lasthop.spec import check_native

    text = MINIMAL + "[[stations]]\ncount = 3\nmcs = 5\n[[flows]]\nrate = '1Mbps'\n"
    monkeypatch.setattr(lasthop, "_native", _FakeNative([("stations[3].mcs", "5", "nope")]),
                        raising=False)
    with pytest.raises(SpecError) as info:
        check_native(norm(text))
    assert str(info.value) == "stations[1].mcs = 5: nope"
    monkeypatch.setattr(lasthop, "_native", _FakeNative([("flows[3].rate", "", "x")]),
                        raising=False)
    with pytest.raises(SpecError) as info:
        check_native(norm(text))
    assert info.value.path == "flows[0].rate"
    monkeypatch.setattr(lasthop, "_native", _FakeNative([("spec", "", "does not parse")]),
                        raising=False)
    with pytest.raises(RuntimeError, match="does not parse"):
        check_native(norm(text))


@pytest.mark.parametrize("path", sorted((ROOT / "experiments").glob("*.toml"))
                         + sorted((ROOT / "python" / "lasthop" / "bench").glob("*.toml")),
                         ids=lambda p: p.name)
def test_checked_in_specs_are_valid(path):
    s = load_spec(path)  # includes the simulator's own 802.11 checks
    assert s.normalized["stations"]


def test_the_simulators_toml_reader_reads_specs_as_tomllib_does():
    """`load_spec` reads TOML with the simulator's reader (`_native.normalize_text`) and falls
    back to tomllib where that refuses the text: on every checked-in spec and every spec of
    the fuzz corpus, where both read the text, the normalized spec (or the problems found) is the
    same either way, and the simulator's reader accepts nothing tomllib refuses."""
    from lasthop import _native
    from lasthop.spec import parse_toml

    paths = sorted(ROOT.glob("experiments/*.toml")) + sorted(ROOT.glob("docs/examples/**/*.toml"))
    paths += sorted((ROOT / "fuzz" / "corpus" / "spec_toml").glob("*"))
    paths += sorted((ROOT / "fuzz" / "regressions" / "spec_toml").glob("*"))
    both = 0
    for p in paths:
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        try:
            doc = parse_toml(text, str(p))
        except SpecFileError:
            doc = None
        for rules in (True, False):
            fast = _native.normalize_text(text, "x", rules)
            if doc is None:
                assert fast is None, p
                continue
            if fast is not None:
                both += 1
                assert fast == _native.normalize(doc, "x", rules), p
    assert both > 100, both


@pytest.mark.parametrize("width,mcs,nss,exists", [(20, 9, 1, False), (20, 9, 3, True), (80, 9, 6, False),
                                                  (160, 9, 3, False), (80, 9, 3, True)])
def test_vht_invalid_combinations_table(width, mcs, nss, exists):
    text = (f'[sim]\nduration = "1s"\n[phy]\nstandard = "vht"\nchannel_width = {width}\n'
            f'[[stations]]\nmcs = {mcs}\nnss = {nss}\n')
    if exists:
        load_spec_text(text, native=False)
    else:
        with pytest.raises(SpecError, match=f"VHT MCS {mcs} does not exist at {width} MHz with nss = {nss}"):
            load_spec_text(text, native=False)


def test_tcp_and_cross_flows_normalize(tmp_path):
    from lasthop.spec import load_spec_text
    s = load_spec_text(
        'name = "t"\n[sim]\nduration = "1s"\n[phy]\nstandard = "vht"\n[[stations]]\nmcs = 7\n'
        '[[flows]]\nstations = 0\npattern = "tcp"\ncc = "bbr"\nbytes = 1000000\nextra_acked = false\n'
        '[[flows]]\ndirection = "cross"\nrate = "10Mbps"\n')
    f0, f1 = s.normalized["flows"]
    assert (f0["pattern"], f0["cc"], f0["bytes"], f0["extra_acked"], f0["rate_bps"]) == ("tcp", "bbr", 1_000_000, False, 0)
    assert (f1["direction"], f1["pattern"], f1["rate_bps"]) == ("cross", "cbr", 10_000_000)


@pytest.mark.parametrize("given,want", [
    (None, "linux"), ('"linux"', "linux"), ('"hystart++"', "hystart++"), ('"off"', "off"),
    ("true", "linux"), ("false", "off"),
])
def test_cubic_slow_start_exit(given, want):
    body = '[sim]\nduration="1s"\n[[stations]]\nmcs=7\n[[flows]]\npattern="tcp"\ncc="cubic"\n'
    if given is not None:
        body += f"hystart={given}\n"
    assert norm(body).normalized["flows"][0]["hystart"] == want


def test_flow_access_category():
    base = '[sim]\nduration="1s"\n[phy]\nstandard="ht"\n[[stations]]\nmcs=7\n[[flows]]\npattern="tcp"\n'
    f0, f1 = norm(base + '[[flows]]\npattern="ping"\nac="VO"\n').normalized["flows"]
    # Given: normalized; absent: no key (the flow keeps mac.access_category, specs unchanged).
    assert "ac" not in f0 and f1["ac"] == "VO"


@pytest.mark.parametrize("body,key,value,needle", [
    ('pattern="ping"\nac="EF"\n', "flows[1].ac", '"EF"', '"BK"|"BE"|"VI"|"VO"'),
    ('pattern="ping"\nac="vo"\n', "flows[1].ac", '"vo"', '"VO"'),
    ('pattern="ping"\nac=6\n', "flows[1].ac", "6", '"VO"'),
    ('direction="cross"\nrate="1Mbps"\nac="VO"\n', "flows[1].ac", '"VO"', 'not used with direction = "cross"'),
])
def test_flow_access_category_errors(body, key, value, needle):
    e = err('[sim]\nduration="1s"\n[[stations]]\nmcs=7\n[[flows]]\npattern="tcp"\n[[flows]]\n' + body)
    assert (e.path, e.value) == (key, value) and needle in str(e), str(e)
    assert "\n" not in str(e)


@pytest.mark.parametrize("extra,needle", [
    ('[ap]\ndriver="firmware"\n', 'ap.driver = "firmware"'),
    ('[ap]\nbuffer_sizer="wqm"\n', 'ap.buffer_sizer = "wqm"'),
    ('[[stations]]\nmcs=7\nparent=0\n', "mesh relay"),
])
def test_flow_access_category_single_queue_nodes(extra, needle):
    # Nodes with one queue carry mac.access_category only (a rule of the simulator's).
    text = '[sim]\nduration="1s"\n[phy]\nstandard="ht"\n[[stations]]\nmcs=7\n' + extra + \
        '[[flows]]\npattern="tcp"\n[[flows]]\npattern="ping"\nac="VI"\n'
    norm(text.replace('ac="VI"', 'ac="BE"'), native=True)
    with pytest.raises(SpecError) as info:
        norm(text, native=True)
    e = info.value
    assert (e.path, e.value) == ("flows[1].ac", '"VI"') and needle in str(e), str(e)
    assert 'mac.access_category ("BE") only' in str(e)


def test_request_response_flow_normalizes():
    from lasthop.spec import load_spec_text
    s = load_spec_text(
        'name = "rr"\n[sim]\nduration = "1s"\n[phy]\nstandard = "vht"\n[[stations]]\nmcs = 7\n'
        '[[flows]]\nstations = 0\npattern = "tcp"\napp = "request_response"\nresponse_bytes = 100000\n'
        'think_time = "20ms"\nrequests = 5\n')
    f = s.normalized["flows"][0]
    assert (f["app"], f["request_bytes"], f["response_bytes"], f["think_time_ns"], f["requests"]) == \
        ("request_response", 300, 100_000, 20_000_000, 5)


STA_BASE = '[sim]\nduration="1s"\n[[stations]]\n'


def test_station_placement_and_rate_control():
    s = norm(STA_BASE + 'rate_control="minstrel"\nnss=2\ndistance_m=12.5\n', native=True)
    st = s.normalized["stations"][0]
    assert st["rate_control"] == "minstrel" and st["error_model"] == "snr"
    assert st["waypoints"] == [[0, 12.5]] and st["repeat"] is False
    s = norm(STA_BASE + 'rate_control="ideal"\nwalk_m=[1, 23]\nspeed_mps=2\n', native=True)
    st = s.normalized["stations"][0]
    assert st["waypoints"] == [[0, 1.0], [11_000_000_000, 23.0], [22_000_000_000, 1.0]]
    assert st["repeat"] is True
    s = norm(STA_BASE + 'mcs=3\nwaypoints=[["0s", 2], ["5s", 30]]\nrepeat=true\n', native=True)
    st = s.normalized["stations"][0]
    assert st["waypoints"] == [[0, 2.0], [5_000_000_000, 30.0]] and st["rate_control"] == "fixed"
    s = norm(STA_BASE + 'mcs=3\ndistance_m=5\n[channel]\npath_loss="tgn_d"\ntx_power_dbm=15\n',
             native=True)
    assert s.normalized["channel"]["path_loss"] == "tgn_d"


@pytest.mark.parametrize("body,key,needle", [
    ('rate_control="minstrel"\nmcs=3\nsnr_db=20\nerror_model="snr"\n', "stations[0].mcs",
     "only with rate_control"),
    ('rate_control="ideal"\n', "stations[0].rate_control", "needs an SNR"),
    ('rate_control="turbo"\n', "stations[0].rate_control", '"fixed"|"ideal"|"minstrel"'),
    ('mcs=1\ndistance_m=0\n', "stations[0].distance_m", "0 < d"),
    ('mcs=1\ndistance_m=3\nwalk_m=[1,2]\n', "stations[0].walk_m", "only one of"),
    ('mcs=1\nwalk_m=[4,4]\n', "stations[0].walk_m", "two distinct"),
    ('mcs=1\nspeed_mps=2\n', "stations[0].speed_mps", "only with walk_m"),
    ('mcs=1\nwaypoints=[["2s", 1], ["1s", 3]]\n', "stations[0].waypoints", "time order"),
    ('mcs=1\nwaypoints=[["0s", 1]]\nrepeat=true\n', "stations[0].repeat", "last time"),
    ('mcs=1\ndistance_m=3\nerror_model="fixed"\n', "stations[0].error_model", '"snr"'),
    ('mcs=1\ndistance_m=3\nsnr_db=20\n', "stations[0].snr_db", "not with a distance"),
    ('mcs=1\n[channel]\npath_loss="tgn_b"\nexponent=3\n', "channel.exponent", "only with"),
    ('mcs=1\n[channel]\npath_loss="free"\n', "channel.path_loss", "log_distance"),
])
def test_station_placement_errors(body, key, needle):
    e = err(STA_BASE + body)
    assert e.path == key and needle in str(e), str(e)


def test_ping_flow_and_firmware_driver():
    s = norm('[sim]\nduration="1s"\n[ap]\ndriver="firmware"\naql_limit_low="2ms"\n'
             '[[stations]]\nmcs=3\n[[flows]]\npattern="ping"\ninterval="20ms"\n', native=True)
    n = s.normalized
    assert n["ap"]["driver"] == "firmware" and n["ap"]["aql_limit_low_ns"] == 2_000_000
    f = n["flows"][0]
    assert f["pattern"] == "ping" and f["packet_size"] == 84
    assert f["rate_bps"] == 84 * 8 * 50  # one 84-byte request every 20 ms


@pytest.mark.parametrize("body,key,needle", [
    ('[ap]\naql=false\n', "ap.aql", 'only with driver = "firmware"'),
    ('[ap]\ndriver="firmware"\naql=false\naql_threshold="9ms"\n', "ap.aql_threshold",
     "only with aql = true"),
    ('[ap]\ndriver="firmware"\naql_limit_low="20ms"\n', "ap.aql_limit_low", "<= ap.aql_limit_high"),
    ('[ap]\ndriver="ath"\n', "ap.driver", '"pull"|"ath9k"|"firmware"|"mt76"'),
    ('[[flows]]\npattern="ping"\nrate="1Mbps"\n', "flows[0].rate", "interval"),
    ('[[flows]]\npattern="cbr"\nrate="1Mbps"\ninterval="1s"\n', "flows[0].interval",
     'only for pattern = "ping"'),
])
def test_ping_and_driver_errors(body, key, needle):
    body = body.replace("[[flows]]", "[[stations]]\nmcs=3\n[[flows]]")
    if "[[stations]]" not in body:
        body += "[[stations]]\nmcs=3\n"
    e = err('[sim]\nduration="1s"\n' + body)
    assert e.path == key and needle in str(e), str(e)


def test_mesh_relays_and_wqm():
    s = norm('[sim]\nduration="1s"\n[mac]\naggregation_min_rate="6.5Mbps"\n'
             '[ap]\nbuffer_sizer="wqm"\nwqm_limit="3ms"\nwqm_variant="aiad"\n'
             '[[stations]]\nmcs=3\n[[stations]]\nmcs=3\nparent=0\ncount=2\n'
             '[[flows]]\nstations=2\npattern="tcp"\n', native=True)
    n = s.normalized
    assert [st["parent"] for st in n["stations"]] == [None, 0, 0]
    assert [st["hop_channel"] for st in n["stations"]] == [0, 0, 0]
    assert n["mac"]["aggregation_min_rate_bps"] == 6_500_000
    assert (n["ap"]["buffer_sizer"], n["ap"]["wqm_limit_ns"], n["ap"]["wqm_variant"]) == ("wqm", 3_000_000, "aiad")


def test_qdisc_scope():
    s = norm('[sim]\nduration="1s"\n[ap]\ndriver="ath9k"\nqdisc="codel"\nqdisc_scope="interface"\n[[stations]]\nmcs=3\n',
             native=True)
    assert s.normalized["ap"]["qdisc_scope"] == "interface"
    # The default (one qdisc per station) is not written: specs without the key keep their text.
    s = norm('[sim]\nduration="1s"\n[ap]\ndriver="ath9k"\nqdisc_scope="station"\n[[stations]]\nmcs=3\n')
    assert "qdisc_scope" not in s.normalized["ap"]


def test_pie_estimator():
    s = norm('[sim]\nduration="1s"\n[ap]\nqdisc="pie"\npie_estimator="dequeue_rate"\n[[stations]]\nmcs=3\n',
             native=True)
    assert (s.normalized["ap"]["qdisc"], s.normalized["ap"]["pie_estimator"]) == ("pie", "dequeue_rate")
    s = norm('[sim]\nduration="1s"\n[ap]\nqdisc="pie"\n[[stations]]\nmcs=3\n')
    assert s.normalized["ap"]["pie_estimator"] == "timestamp"


def test_fq_aqm():
    s = norm('[sim]\nduration="1s"\n[ap]\nqdisc="fq_codel"\nfq_aqm="dualpi2"\n[[stations]]\nmcs=3\n', native=True)
    assert s.normalized["ap"]["fq_aqm"] == "dualpi2"
    # The default (CoDel per flow, as mac80211) is not written, so older specs keep their canonical form.
    s = norm('[sim]\nduration="1s"\n[ap]\nqdisc="fq_codel"\nfq_aqm="codel"\n[[stations]]\nmcs=3\n')
    assert "fq_aqm" not in s.normalized["ap"]


def test_ath9k_qdepth():
    s = norm('[sim]\nduration="1s"\n[ap]\ndriver="ath9k"\nath9k_qdepth=500\n[[stations]]\nmcs=3\n', native=True)
    assert s.normalized["ap"]["ath9k_qdepth"] == 500
    # The default (ath9k's ATH_MAX_QDEPTH) is not written, so older specs keep their canonical form.
    s = norm('[sim]\nduration="1s"\n[ap]\ndriver="ath9k"\nath9k_qdepth=123\n[[stations]]\nmcs=3\n')
    assert "ath9k_qdepth" not in s.normalized["ap"]


def test_dequeue_cost():
    s = norm('[sim]\nduration="1s"\n[ap]\ndriver="ath9k"\ndequeue_cost="2us"\n[[stations]]\nmcs=3\n', native=True)
    assert s.normalized["ap"]["dequeue_cost_ns"] == 2000
    s = norm('[sim]\nduration="1s"\n[[stations]]\nmcs=3\n')
    assert s.normalized["ap"]["dequeue_cost_ns"] == 0


@pytest.mark.parametrize("body,key,needle", [
    ('[[stations]]\nmcs=3\nparent=0\n', "stations[0].parent", "first station"),
    ('[[stations]]\nmcs=3\n[[stations]]\nmcs=3\nparent=1\n', "stations[1].parent", "earlier station"),
    ('[ap]\ndriver="firmware"\n[[stations]]\nmcs=3\n[[stations]]\nmcs=3\nparent=0\n',
     "stations[1].parent", 'ap.driver = "pull"'),
    ('[ap]\nbuffer_sizer="wqm"\nqdisc="codel"\n[[stations]]\nmcs=3\n', "ap.buffer_sizer", 'qdisc = "fifo"'),
    ('[ap]\nwqm_limit="2ms"\n[[stations]]\nmcs=3\n', "ap.wqm_limit", 'buffer_sizer = "wqm"'),
    ('[ap]\nbuffer_sizer="bdp"\n[[stations]]\nmcs=3\n', "ap.buffer_sizer", '"none"|"wqm"'),
    ('[ap]\nbuffer_sizer="wqm"\nwqm_variant="aimd2"\n[[stations]]\nmcs=3\n', "ap.wqm_variant", "aiad"),
    ('[ap]\npie_estimator="dequeue_rate"\n[[stations]]\nmcs=3\n', "ap.pie_estimator", 'only with qdisc = "pie"'),
    ('[ap]\nqdisc="pie"\npie_estimator="rate"\n[[stations]]\nmcs=3\n', "ap.pie_estimator", '"dequeue_rate"'),
    ('[ap]\nath9k_qdepth=500\n[[stations]]\nmcs=3\n', "ap.ath9k_qdepth", 'only with driver = "ath9k"'),
    ('[ap]\nqdisc_scope="interface"\n[[stations]]\nmcs=3\n', "ap.qdisc_scope", 'only with driver = "ath9k"'),
    ('[ap]\ndriver="ath9k"\nqdisc="fq_codel"\nqdisc_scope="interface"\n[[stations]]\nmcs=3\n', "ap.qdisc_scope",
     'only with qdisc = "fifo", "codel" or "pie"'),
    ('[ap]\nfq_aqm="dualpi2"\n[[stations]]\nmcs=3\n', "ap.fq_aqm", 'only with qdisc = "fq_codel"'),
    ('[ap]\nqdisc="fq_codel"\nfq_aqm="pi2"\n[[stations]]\nmcs=3\n', "ap.fq_aqm", '"dualpi2"'),
    ('[ap]\nqdisc="fq_codel"\nfq_aqm="dualpi2"\nce_threshold="5ms"\n[[stations]]\nmcs=3\n', "ap.ce_threshold",
     'not with fq_aqm = "dualpi2"'),
    ('[ap]\ndriver="ath9k"\nath9k_qdepth=0\n[[stations]]\nmcs=3\n', "ap.ath9k_qdepth", "1..=1048576"),
    ('[ap]\ndequeue_cost="101us"\n[[stations]]\nmcs=3\n', "ap.dequeue_cost", "at most 100us"),
    ('[ap]\ndequeue_cost="-1us"\n[[stations]]\nmcs=3\n', "ap.dequeue_cost", "duration"),
    ('[mac]\naggregation=false\naggregation_min_rate="6.5Mbps"\n[[stations]]\nmcs=3\n',
     "mac.aggregation_min_rate", "only with aggregation = true"),
    ('[[stations]]\nmcs=3\nhop_channel=1\n', "stations[0].hop_channel", "associated with the AP"),
    ('[mac]\nmax_amsdu_bytes=2000\n[[stations]]\nmcs=3\n', "mac.max_amsdu_bytes", "3839..=11454"),
    ('[phy]\nstandard="ht"\n[mac]\nmax_amsdu_bytes=11454\n[[stations]]\nmcs=3\n', "mac.max_amsdu_bytes",
     "3839..=7935"),
    ('[[stations]]\nmcs=3\n[[stations]]\nmcs=3\nparent=0\nhop_channel=1\n[[stations]]\nmcs=3\n'
     'parent=0\nhop_channel=2\n', "stations[2].hop_channel", "like the other stations behind station 0"),
    ('[[stations]]\nmcs=3\n[[stations]]\nmcs=3\nparent=0\nhop_channel=64\n', "stations[1].hop_channel",
     "0..=63"),
])
def test_mesh_and_wqm_errors(body, key, needle):
    e = err('[sim]\nduration="1s"\n' + body)
    assert e.path == key and needle in str(e), str(e)


def test_quic_page_expands_to_table_ii_objects():
    s = norm('[sim]\nduration="1s"\n[[stations]]\nmcs=3\n[[flows]]\npattern="quic"\npage="amazon"\n',
             native=True)
    o = s.normalized["flows"][0]["objects"]
    assert len(o) == 64 and sum(o) == 3_723_000 and o[0] >= o[-1]
    e = err('[sim]\nduration="1s"\n[[stations]]\nmcs=3\n[[flows]]\npattern="quic"\npage="bing"\n')
    assert e.path == "flows[0].page" and "amazon" in str(e)
    e = err('[sim]\nduration="1s"\n[[stations]]\nmcs=3\n[[flows]]\npattern="quic"\npage="live"\nbytes=5\n')
    assert e.path == "flows[0].bytes"


def test_quic_flow_normalizes():
    s = norm('[sim]\nduration="1s"\n[[stations]]\nmcs=3\n[[flows]]\npattern="quic"\nprofile="bquic"\n'
             'bytes=1000000\nzero_rtt=true\n', native=True)
    f = s.normalized["flows"][0]
    assert (f["pattern"], f["profile"], f["bytes"], f["zero_rtt"], f["packet_size"], f["initial_cwnd"],
            f["ack_policy"]) == ("quic", "bquic", 1_000_000, True, 1378, 10, None)


def test_quic_history_keys_normalize_and_pass_native_validation():
    s = norm('[sim]\nduration="5s"\n[[stations]]\nmcs=3\n[[flows]]\npattern="quic"\nbytes=1000000\n'
             'connections=4\nidle="2s"\nidle_timeout="1s"\nreconnect="0rtt"\nhistory="ewma"\n'
             'history_guard="rtt"\nhistory_events="close_every_hello"\n', native=True)
    f = s.normalized["flows"][0]
    assert (f["connections"], f["idle_ns"], f["idle_timeout_ns"], f["reconnect"], f["history"],
            f["history_guard"], f["history_events"]) == (4, 2_000_000_000, 1_000_000_000, "0rtt", "ewma", "rtt",
                                                          "close_every_hello")


@pytest.mark.parametrize("body,key,needle", [
    ('pattern="quic"\nconnections=3\n', "flows[0].connections", "finite transfer"),
    ('pattern="quic"\nbytes=10\nconnections=0\n', "flows[0].connections", "1..=10000"),
    ('pattern="quic"\nbytes=10\nreconnect="2rtt"\n', "flows[0].reconnect", '"1rtt"|"0rtt"'),
    ('pattern="quic"\nbytes=10\nhistory="median"\n', "flows[0].history", '"mean"'),
    ('pattern="quic"\nbytes=10\nhistory_guard="rtt"\n', "flows[0].history_guard", 'unless history'),
    ('pattern="quic"\nbytes=10\nhistory_events="hello"\n', "flows[0].history_events", '"close_every_hello"'),
    ('pattern="quic"\nbytes=10\nidle_timeout="0s"\n', "flows[0].idle_timeout", "> 0"),
    ('pattern="quic"\nbytes=10\nidle="soon"\n', "flows[0].idle", "duration"),
    ('pattern="tcp"\nhistory="mean"\n', "flows[0].history", 'only for pattern = "quic"'),
])
def test_quic_history_errors(body, key, needle):
    e = err('[sim]\nduration="1s"\n[[stations]]\nmcs=3\n[[flows]]\n' + body)
    assert e.path == key and needle in str(e), str(e)
    assert "\n" not in str(e)


@pytest.mark.parametrize("body,key,needle", [
    ('pattern="quic"\ndirection="up"\n', "flows[0].direction", '"down"'),
    ('pattern="quic"\nprofile="fast"\n', "flows[0].profile", '"quic"|"bquic"'),
    ('pattern="quic"\nack_policy="every"\n', "flows[0].ack_policy", "ack_decimation"),
    ('pattern="quic"\npacket_size=1000\n', "flows[0].packet_size", "1228"),
    ('pattern="tcp"\nprofile="bquic"\n', "flows[0].profile", 'only for pattern = "quic"'),
    ('pattern="quic"\ncc="bbr"\n', "flows[0].cc", 'one of "cubic"|"prague"'),
    ('pattern="quic"\ncc="prague"\n', "flows[0].ecn", 'cc = "prague" does not react to "off"'),
    ('pattern="quic"\necn="l4s"\n', "flows[0].ecn", 'use cc = "prague"'),
    ('pattern="cbr"\nrate="1Mbps"\nbytes=10\n', "flows[0].bytes", '"tcp" or "quic"'),
])
def test_quic_flow_errors(body, key, needle):
    e = err('[sim]\nduration="1s"\n[[stations]]\nmcs=3\n[[flows]]\n' + body)
    assert e.path == key and needle in str(e), str(e)


def test_wired_and_station_qdiscs():
    n = norm('[sim]\nduration="1s"\n[wired]\nqdisc="fq_codel"\nqueue_limit=300\n'
             '[[stations]]\nmcs=3\n[[stations]]\nmcs=3\nqdisc="codel"\nqueue_limit=200\n'
             '[[stations]]\nmcs=3\nqdisc="pie"\nparent=0\n', native=True).normalized
    assert (n["wired"]["qdisc"], n["wired"]["queue_limit"]) == ("fq_codel", 300)
    assert [(st["qdisc"], st["queue_limit"]) for st in n["stations"]] == \
        [("fifo", 1000), ("codel", 200), ("pie", 1000)]


def test_wired_and_station_qdiscs_through_native_validation():
    # The Rust side accepts every discipline and parses the normalized keys.
    for q in ("fifo", "codel", "pie", "fq_codel"):
        n = norm(f'[sim]\nduration="1s"\n[wired]\nqdisc="{q}"\n[[stations]]\nmcs=3\n'
                 f'qdisc="{q}"\n', native=True).normalized
        assert n["wired"]["qdisc"] == q and n["stations"][0]["qdisc"] == q


@pytest.mark.parametrize("body,key,value,needle", [
    ('[wired]\nqdisc="red"\n[[stations]]\nmcs=3\n', "wired.qdisc", '"red"',
     '"fifo"|"codel"|"pie"|"fq_codel"'),
    ('[wired]\nqdisc=1\n[[stations]]\nmcs=3\n', "wired.qdisc", "1", '"fq_codel"'),
    ('[[stations]]\nmcs=3\nqdisc="fq-codel"\n', "stations[0].qdisc", '"fq-codel"',
     '"fifo"|"codel"|"pie"|"fq_codel"'),
    ('[[stations]]\nmcs=3\n[[stations]]\nmcs=3\ncount=2\nqdisc="codel"\n'
     '[[stations]]\nmcs=3\nparent=2\n', "stations[1].qdisc", '"codel"', '"fifo" for a relay'),
])
def test_wired_and_station_qdisc_errors(body, key, value, needle):
    e = err('[sim]\nduration="1s"\n' + body)
    assert (e.path, e.value) == (key, value) and needle in str(e), str(e)


AGGCTL = '[sim]\nduration="10s"\n[[stations]]\ncount=2\nmcs=9\nnss=2\n' \
         '[[flows]]\npattern="aggctl"\n'


def test_aggctl_flows_and_section_normalized():
    s = norm(AGGCTL + '[aggctl]\ntarget_aggregation=24\ninterval="250ms"\nk0=0.5\n'
             'clock_resolution="10us"\nclock_jitter="20us"\nreport_blackout=["2s","3s"]\n')
    n = s.normalized
    assert [f["pattern"] for f in n["flows"]] == ["aggctl", "aggctl"]
    assert n["flows"][0]["rate_bps"] == 0 and n["flows"][0]["packet_size"] == 1500
    a = n["aggctl"]
    assert a["target_aggregation"] == 24 and a["interval_ns"] == 250_000_000 and a["k0"] == 0.5
    # The watchdog's defaults follow Δ: hold 2Δ, decay after 4Δ.
    assert a["hold_time_ns"] == 500_000_000 and a["decay_after_ns"] == 1_000_000_000
    assert a["clock_resolution_ns"] == 10_000 and a["clock_jitter_ns"] == 20_000
    assert a["report_blackout_ns"] == [2_000_000_000, 3_000_000_000]


def test_nss_change_normalized():
    s = norm('[sim]\nduration="30s"\n[[stations]]\nmcs=9\nnss=2\nnss_change=["20s", 1]\n')
    assert s.normalized["stations"][0]["nss_change"] == [20_000_000_000, 1]


def test_aggctl_errors_name_key_value_and_allowed():
    e = err(AGGCTL + '[mac]\nmax_ampdu_mpdus=16\n[aggctl]\ntarget_aggregation=32\n')
    assert e.path == "aggctl.target_aggregation" and e.value == "32" and "1..=16" in e.allowed
    e = err(AGGCTL.replace('pattern="aggctl"', 'pattern="aggctl"\ndirection="up"'))
    assert e.path == "flows[0].direction" and '"down"' in e.allowed
    e = err(AGGCTL.replace('pattern="aggctl"', 'pattern="aggctl"\nrate="10Mbps"'))
    assert e.path == "flows[0].rate"
    e = err(AGGCTL + '[[flows]]\npattern="aggctl"\nstations=1\n')
    assert e.path == "flows[1].stations" and "one aggctl flow per station" in e.allowed
    e = err(AGGCTL + '[aggctl]\nNe=32\n')
    assert e.path == "aggctl.Ne" and "unknown key" in e.allowed
    e = err(AGGCTL + '[aggctl]\nhold_time="100ms"\n')
    assert e.path == "aggctl.hold_time" and ">= aggctl.interval" in e.allowed
    e = err('[sim]\nduration="30s"\n[[stations]]\nmcs=9\nnss=2\nnss_change=["20s", 3]\n')
    assert e.path == "stations[0].nss_change" and "1..=2" in e.allowed
    e = err('[sim]\nduration="30s"\n[[stations]]\nmcs=9\nnss=2\nnss_change=["40s", 1]\n')
    assert e.path == "stations[0].nss_change" and "sim.duration" in e.allowed
    # A rule only the simulator knows (the estimator's gap against Δ) comes back the same way.
    with pytest.raises(SpecError) as info:
        norm(AGGCTL + '[aggctl]\ngap_threshold="1ms"\ninterval="100ms"\n', native=True)
    assert info.value.path == "aggctl.gap_threshold"


VWIRE = """
[sim]
duration = "2s"
[phy]
standard = "ht"
band = "2.4GHz"
[vwire]
period = "1s"
[[stations]]
mcs = 7
device = "tv"
[[flows]]
pattern = "tcp"
split = true
app_rate = "30Mbps"
app_class = "video_4k"
utility = "step:2.5Mbps:4,32Mbps:10"
[[flows]]
pattern = "tcp"
split = true
utility = "log:0.1"
"""


def test_vwire_keys_normalize():
    n = norm(VWIRE).normalized
    assert n["vwire"] == {"enabled": True, "period_ns": 1_000_000_000, "efficiency": 0.75,
                          "relay_buffer_bytes": 4 << 20, "sndbuf_bytes": 256 << 10,
                          "tsq_bytes": 1 << 20, "sample_ns": 10_000_000, "work_conserving": True}
    assert n["stations"][0]["device"] == "tv"
    f0, f1 = n["flows"]
    assert (f0["split"], f0["split_wired_cc"], f0["app_rate_bps"], f0["app_class"]) == (True, "bbr", 30_000_000, "video_4k")
    assert f0["utility"] == {"step": [[2_500_000.0, 4.0], [32_000_000.0, 10.0]]}
    assert f1["utility"] == {"log": 0.1} and f1["app_class"] is None
    # No [vwire] table: none in the normalized spec; non-split TCP flows carry the defaults.
    n = norm(MINIMAL).normalized
    assert "vwire" not in n
    # A split upload, and the proxy's window clamp (written only when set).
    up = VWIRE.replace('period = "1s"', 'period = "1s"\nwindow_clamp = 65536').replace(
        'split = true\nutility = "log:0.1"', 'split = true\ndirection = "up"')
    n = norm(up).normalized
    assert n["vwire"]["window_clamp_bytes"] == 65536 and n["flows"][1]["split"] and n["flows"][1]["direction"] == "up"


@pytest.mark.parametrize("edit, path", [
    # An upload may be split, but Virtual Wires allocates only the downloads.
    (('split = true\napp_rate', 'split = true\ndirection = "up"\napp_rate'), "flows[0].app_class"),
    (('period = "1s"', 'period = "1s"\nwindow_clamp = 100'), "vwire.window_clamp"),
    (('period = "1s"', 'period = "1s"\nwindow_clamp = 8388608'), "vwire.window_clamp"),
    (('utility = "log:0.1"', 'utility = "log:-1"'), "flows[1].utility"),
    (('utility = "step:2.5Mbps:4,32Mbps:10"', 'utility = "step:32Mbps:10,2.5Mbps:4"'), "flows[0].utility"),
    (('app_class = "video_4k"', 'app_class = "movie"'), "flows[0].app_class"),
    (('device = "tv"', 'device = "fridge"'), "stations[0].device"),
    (('period = "1s"', 'period = "1s"\nefficiency = 1.5'), "vwire.efficiency"),
    (('period = "1s"', 'period = "1s"\nbogus = 1'), "vwire.bogus"),
])
def test_vwire_bad_keys_name_the_path(edit, path):
    e = err(VWIRE.replace(*edit))
    assert e.path == path, str(e)


def test_vwire_keys_pass_native_checks():
    from lasthop.spec import check_native
    check_native(norm(VWIRE))


def test_emu_section_is_normalized_only_when_given():
    plain = norm('[sim]\nduration="1s"\n[[stations]]\nmcs = 7\nnss = 1\n')
    assert "emu" not in plain.normalized
    s = norm('[sim]\nduration="1s"\n[emu]\nap_host = true\n[[stations]]\nmcs = 7\nnss = 1\n')
    assert s.normalized["emu"] == {"ap_host": True}
    assert norm('[sim]\nduration="1s"\n[emu]\n[[stations]]\nmcs = 7\nnss = 1\n').normalized["emu"] == {"ap_host": False}
    with pytest.raises(SpecError, match=r"emu\.ap_host = 3"):
        norm('[sim]\nduration="1s"\n[emu]\nap_host = 3\n[[stations]]\nmcs = 7\nnss = 1\n')
    with pytest.raises(SpecError, match=r"emu\.aphost"):
        norm('[sim]\nduration="1s"\n[emu]\naphost = true\n[[stations]]\nmcs = 7\nnss = 1\n')


def test_fq_codel_queue_limit_defaults_to_mac80211s():
    base = MINIMAL + "\n[ap]\nqdisc = \"fq_codel\"\n"
    assert norm(base).normalized["ap"]["queue_limit"] == 8192
    assert norm(MINIMAL).normalized["ap"]["queue_limit"] == 1000
    assert norm(base.replace('qdisc = "fq_codel"', 'qdisc = "fq_codel"\nqueue_limit = 500')).normalized["ap"]["queue_limit"] == 500


def test_rx_delivery_is_checked():
    assert norm(MINIMAL + "\n[mac]\nrx_delivery = \"ppdu\"\n").normalized["mac"]["rx_delivery"] == "ppdu"
    with pytest.raises(SpecError, match="mac.rx_delivery"):
        norm(MINIMAL + "\n[mac]\nrx_delivery = \"mpdu\"\n")


def test_rules_in_the_reading_call_report_what_check_native_reports():
    """`normalize(rules=True)` (one native call) lists what `check_native` lists after a plain
    `normalize`, with the TOML tables' indices."""
    from lasthop.spec import check_native, normalize, parse_toml

    texts = [p.read_text() for p in sorted((ROOT / "tests" / "python" / "bad_specs").glob("*.toml"))]
    # Normalized flows[3] is the second [[flows]] table.
    texts.append("[sim]\nduration = '1s'\n[phy]\nstandard = 'ofdm'\n[[stations]]\nmcs = 5\ncount = 3\n"
                 "[[flows]]\nrate = '1Mbps'\n[[flows]]\nstations = [2]\nrate = '1Mbps'\nac = 'VO'\n")
    seen = 0
    for text in texts:
        try:
            spec = normalize(parse_toml(text, "t.toml"), "t")
        except (SpecError, SpecFileError):
            continue
        with pytest.raises(SpecError) as two_calls:
            check_native(spec)
        with pytest.raises(SpecError) as one_call:
            normalize(parse_toml(text, "t.toml"), "t", rules=True)
        assert [str(e) for e in one_call.value.all()] == [str(e) for e in two_calls.value.all()]
        seen += 1
    assert str(one_call.value).startswith('flows[1].ac = "VO": ')
    assert seen >= 2, seen


HE = """
[sim]
duration = "2s"
[phy]
standard = "he"
[[stations]]
mcs = 7
"""


def test_ofdma_is_he_only_and_written_only_when_given() -> None:
    assert "ofdma" not in norm(HE).normalized["mac"]
    n = norm(HE + "\n[mac.ofdma]\nul = true\n").normalized["mac"]["ofdma"]
    assert n == {"dl": True, "ul": True, "scheduler": "txq", "max_users": 4, "ack": "mu-bar", "mu_edca_aifsn": 8,
                 "mu_edca_cw_min": 511, "mu_edca_cw_max": 1023, "mu_edca_timer_ns": 255 * 8 * 1_024_000}
    e = err(MINIMAL + "\n[mac.ofdma]\n")
    assert e.path == "mac.ofdma" and '"he"' in str(e)
    e = err(HE + "\n[mac.ofdma]\nmax_users = 38\n")
    assert e.path == "mac.ofdma.max_users" and "1..=37" in str(e)
    e = err(HE + "\n[mac.ofdma]\nul = true\nmu_edca_timer = \"1ms\"\n")
    assert e.path == "mac.ofdma.mu_edca_timer" and "8 TU" in str(e)
    e = err(HE + "\n[mac.ofdma]\nmu_edca_cw_min = 1023\nmu_edca_cw_max = 511\n")
    assert e.path == "mac.ofdma.mu_edca_cw_min"
    e = err(HE + "\n[mac.ofdma]\ndl = false\n")
    assert e.path == "mac.ofdma.dl"
    e = err(HE + "\n[mac.ofdma]\nsheduler = \"rr\"\n")
    assert e.path == "mac.ofdma.sheduler" and "scheduler" in str(e)


SEND_BUFFER = MINIMAL + """
[[flows]]
pattern = "tcp"
send_buffer = "linux"
"""


def test_send_buffer_is_written_only_when_asked_for():
    assert norm(SEND_BUFFER).normalized["flows"][0]["send_buffer"] == "linux"
    plain = norm(SEND_BUFFER.replace('send_buffer = "linux"', 'send_buffer = "none"')).normalized
    assert "send_buffer" not in plain["flows"][0], "the default is left out: older specs normalize as before"


@pytest.mark.parametrize("edit, why", [
    ('send_buffer = "linux"\nbytes = 1000\ncc = "bbr"\nextra_acked = false', None),
    ('send_buffer = "big"', "none"),
    ('send_buffer = "linux"\napp = "request_response"\nresponse_bytes = 1000', "bulk"),
    ('send_buffer = "linux"\napp_rate = "10Mbps"', "app_rate"),
    ('send_buffer = "linux"\nsplit = true', "split"),
])
def test_send_buffer_rules(edit, why):
    text = SEND_BUFFER.replace('send_buffer = "linux"', edit)
    if why is None:
        assert norm(text).normalized["flows"][0]["bytes"] == 1000
        return
    e = err(text)
    assert e.path == "flows[0].send_buffer" and why in str(e), str(e)
    assert "\n" not in str(e)


TSO = MINIMAL + """
[[flows]]
pattern = "tcp"
tso = "linux-3.17"
"""


def _set_only_when_asked_and_refused(base: str, key: str, value: str, default: str, refusals):
    """`key = value` in `base`'s flow is normalized, `key = default` is left out of it, and each
    (text, why) of `refusals` fails on flows[0].`key` with one line containing `why`."""
    assert norm(base).normalized["flows"][0][key] == value
    assert key not in norm(base.replace(f'"{value}"', f'"{default}"')).normalized["flows"][0]
    for text, why in refusals:
        e = err(text)
        assert e.path == f"flows[0].{key}" and why in str(e) and "\n" not in str(e), str(e)


def test_tso_is_written_only_when_asked_for_and_refused_where_it_cannot_apply():
    on = 'tso = "linux-3.17"'
    _set_only_when_asked_and_refused(TSO, "tso", "linux-3.17", "off", [
        (TSO.replace(on, 'tso = "on"'), "linux-3.17"),
        (TSO.replace(on, on + "\nsplit = true"), "split"),
        (TSO.replace(on, on + '\ncc = "bbr"'), "Linux 3.17 had no BBR"),
        (TSO.replace('pattern = "tcp"', 'pattern = "saturated"'), "tcp")])


PACER = MINIMAL + """
[[flows]]
pattern = "quic"
pacer = "chromium-v39"
"""


def test_pacer_is_written_only_when_asked_for_and_refused_where_nothing_paces():
    assert norm(PACER + 'profile = "bquic"\npacing = true\n').normalized["flows"][0]["pacer"] == "chromium-v39"
    _set_only_when_asked_and_refused(PACER, "pacer", "chromium-v39", "per-packet", [
        (PACER.replace('"chromium-v39"', '"lumpy"'), "chromium-v39"),
        (PACER + 'profile = "bquic"\n', "paces"),
        (PACER + "pacing = false\n", "paces"),
        (PACER.replace('pattern = "quic"', 'pattern = "tcp"'), "quic")])


def test_send_buffer_only_for_tcp():
    e = err(SEND_BUFFER.replace('pattern = "tcp"', 'pattern = "saturated"'))
    assert e.path == "flows[0].send_buffer" and "tcp" in str(e), str(e)
