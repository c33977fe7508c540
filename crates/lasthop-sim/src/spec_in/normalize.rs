//! `normalize`: the checks and defaults of docs/spec.md, section by section, in the order the
//! document lists them; each reader declares its key's type, default and range once.

use super::raw::{format_duration, parse_duration, parse_rate, show_value, Raw};
use super::{pages, Res, SpecError, Table};
use crate::spec::ranges::{self, ACK_POLICIES, ALLOCATIONS, APP_CLASSES, DEVICES, MAX_DISTANCE_M};
use crate::spec::names::{self, AmpduFormation, App, BufferSizer, Cc, FqAqm, Direction, Driver, History, HistoryEvents, HistoryGuard, MuAck, MuScheduler, PathLoss, Pattern, Profile, Qdisc, Reconnect, RxDelivery, Scheduler, WqmVariant};
use crate::spec::{AggctlSpec, ApSpec, ChannelSpec, EmuSpec, FadingModel, FadingSpec, FlowSpec, InterferenceSpec, MacSpec, OfdmaSpec, PhySpec, SimSpec, Spec, StationSpec, UtilitySpec, VwireSpec, WiredSpec};
use lasthop_algo::ecn::EcnMode;
use lasthop_wifi::mac::edca::AccessCategory;
use lasthop_wifi::mac::exchange::RtsPolicy;
use lasthop_wifi::phy::{Band, Standard};

mod edca_ecn;
mod flows;
mod ofdma;
mod stations;
mod write;
pub use write::spec_json;
use edca_ecn::{ap_ecn, edca_keys};
use ofdma::ofdma_table;
use flows::flows_section;
use stations::stations_section;

/// A normalized spec: the typed spec, its canonical JSON (what Python and a result file keep;
/// `Spec::from_json` reads it back), and for each normalized station and flow the index of the
/// `[[stations]]` / `[[flows]]` table it came from.
#[derive(Clone, Debug)]
pub struct Normalized {
    pub spec: Spec,
    pub json: String,
    pub station_group: Vec<usize>,
    pub flow_table: Vec<usize>,
    /// The run's name, seed and simulated duration (what a caller needs before the rest).
    pub name: String,
    pub seed: u64,
    pub duration_ns: u64,
}

/// Two readings are the same when they wrote the same JSON from the same tables (the typed spec
/// is what the JSON says).
impl PartialEq for Normalized {
    fn eq(&self, o: &Self) -> bool {
        (&self.json, &self.station_group, &self.flow_table, &self.name, self.seed, self.duration_ns)
            == (&o.json, &o.station_group, &o.flow_table, &o.name, o.seed, o.duration_ns)
    }
}

/// The normalized stations: one per `[[stations]]` table (its stations are alike) and each
/// station's table.
struct Stations {
    groups: Vec<StationSpec>,
    of: Vec<usize>,
}

impl Stations {
    fn len(&self) -> usize {
        self.of.len()
    }
    fn get(&self, i: usize) -> &StationSpec {
        &self.groups[self.of[i]]
    }
}

/// One `[[flows]]` table: its normalized flow (its `station` not yet set) and the stations it
/// goes to.
struct FlowTable {
    f: FlowSpec,
    sel: Vec<usize>,
}

/// Per-standard facts (docs/spec.md "Sections").
struct Std {
    widths: &'static [i128],
    guard_intervals: &'static [i128],
    mcs_max: i128,
    nss_max: i128,
    bands: &'static [Band],
    ba_window: i128,
    max_ampdu_bytes: i128,
    max_ppdu_time_ns: u64,
    default_width: i128,
}

const STANDARDS: [(Standard, Std); 4] = [
    // Clause 17 OFDM (802.11a/g): MCS index 0..7 = 6, 9, 12, 18, 24, 36, 48, 54 Mb/s.
    (Standard::Ofdm, Std { widths: &[20], guard_intervals: &[800], mcs_max: 7, nss_max: 1, bands: &[Band::Ghz2_4, Band::Ghz5], ba_window: 64, max_ampdu_bytes: 65535, max_ppdu_time_ns: 5_484_000, default_width: 20 }),
    // Clause 19 HT: per-stream MCS 0..7 with nss 1..4 (equal modulation).
    (Standard::Ht, Std { widths: &[20, 40], guard_intervals: &[800, 400], mcs_max: 7, nss_max: 4, bands: &[Band::Ghz2_4, Band::Ghz5], ba_window: 64, max_ampdu_bytes: 65535, max_ppdu_time_ns: 10_000_000, default_width: 20 }),
    // Clause 21 VHT (5 GHz only).
    (Standard::Vht, Std { widths: &[20, 40, 80, 160], guard_intervals: &[800, 400], mcs_max: 9, nss_max: 8, bands: &[Band::Ghz5], ba_window: 64, max_ampdu_bytes: 1_048_575, max_ppdu_time_ns: 5_484_000, default_width: 80 }),
    // Clause 27 HE (SU).
    (Standard::He, Std { widths: &[20, 40, 80, 160], guard_intervals: &[800, 1600, 3200], mcs_max: 11, nss_max: 8, bands: &Band::ALL, ba_window: 256, max_ampdu_bytes: 6_500_631, max_ppdu_time_ns: 5_484_000, default_width: 80 }),
];

/// [`super::normalize_all`], then the simulator's rules across keys ([`crate::Spec::problems`])
/// of the typed spec it built: the normalized spec, or every problem of the document, those of
/// the rules with the station and flow indices of the TOML tables, each once.
pub fn normalize_checked(doc: &Raw, default_name: &str) -> Result<Normalized, Vec<SpecError>> {
    let n = super::normalize_all(doc, default_name)?;
    let mut problems: Vec<SpecError> = Vec::new();
    for (path, value, allowed) in n.spec.problems() {
        let e = SpecError::new(map_path(&path, &n), if value.is_empty() { "(default)".into() } else { value }, allowed);
        if !problems.contains(&e) {
            problems.push(e);
        }
    }
    if problems.is_empty() {
        Ok(n)
    } else {
        Err(problems)
    }
}

/// [`normalize_checked`] for a tool that reads a spec itself: the canonical normalized JSON, or
/// every problem as a line `TOOL: FILE: spec error: path = value: allowed`.
pub fn normalize_all_or_lines(doc: &Raw, tool: &str, file: &str) -> Result<String, String> {
    match normalize_checked(doc, "scenario") {
        Ok(n) => Ok(n.json),
        Err(es) => Err(es.iter().map(|e| format!("{tool}: {file}: spec error: {e}")).collect::<Vec<_>>().join("\n")),
    }
}

/// `stations[5].mcs` (normalized index) -> `stations[1].mcs` (TOML table index).
fn map_path(path: &str, n: &Normalized) -> String {
    for (name, table) in [("stations", &n.station_group), ("flows", &n.flow_table)] {
        if let Some(rest) = path.strip_prefix(name).and_then(|r| r.strip_prefix('[')) {
            if let Some((i, tail)) = rest.split_once(']') {
                if let Some(t) = i.parse::<usize>().ok().and_then(|i| table.get(i)) {
                    return format!("{name}[{t}]{tail}");
                }
            }
        }
    }
    path.to_owned()
}

/// The standards and the bands each allows.
pub fn standards() -> Vec<(&'static str, Vec<String>)> {
    STANDARDS.iter().map(|(n, s)| (n.name(), s.bands.iter().map(|&b| names::band_name(b)).collect())).collect()
}

/// IEEE 802.11-2020 Tables 21-30..21-61: VHT (width, mcs, nss) combinations that do not exist
/// (the number of data bits per symbol would not be an integer per encoder).
fn vht_invalid(width: i128, mcs: i128, nss: i128) -> bool {
    (width == 20 && mcs == 9 && [1, 2, 4, 5, 7, 8].contains(&nss))
        || [(80, 6, 3), (80, 6, 7), (80, 9, 6), (160, 9, 3)].contains(&(width, mcs, nss))
}

const CONTROL_RATES_MBPS: [u64; 8] = [6, 9, 12, 18, 24, 36, 48, 54];
/// Association IDs 1..=2007.
pub const MAX_STATIONS: i128 = 2007;
const MAX_BINS: u64 = 1_000_000;
const U64_MAX: i128 = u64::MAX as i128;
/// Most packets any queue may hold: 2^20, far above deployed queues (txqueuelen 1000,
/// mac80211's 8192) and still within memory when a saturated source fills it.
const MAX_QUEUE: i128 = 1 << 20;
/// A result file is NAME-s<seed>.json (with -emu-, a pcap suffix): room for those in 255 bytes.
const NAME_MAX: usize = 200;
const UTILITY_TEXT: &str = "\"step:RATE:U[,RATE:U...]\" (rates increasing, utilities >= 0 non-decreasing), e.g. \"step:32Mbps:10\", or \"log:W\" with W > 0, e.g. \"log:0.1\"";

fn ms(ns: u64) -> String {
    format_duration(ns)
}

/// The context later sections read from earlier ones.
struct Cell {
    standard: String,
    std: &'static Std,
    width: i128,
    duration: u64,
    aggregation: bool,
    max_mpdus: i128,
    driver: Driver,
}

/// Validate a TOML document (`doc`) and return the normalized spec; `default_name` names the
/// run when the document does not.
pub fn normalize(doc: &Raw, default_name: &str) -> Res<Normalized> {
    let top = Table::new(Some(doc), "", "", "a TOML document")?;
    let name = top.str(
        "name",
        Some(default_name),
        "a name of letters, digits, '.', '_', '-' (it names the result file)",
    )?;
    if name.chars().count() > NAME_MAX {
        return Err(top.fail(
            "name",
            format!("at most {NAME_MAX} characters (it names the result file, whose name the file system limits to 255 bytes)"),
        ));
    }
    if !name_ok(&name) {
        return Err(top.fail(
            "name",
            "letters, digits, '.', '_', '-', starting with a letter or digit (it names the result file)",
        ));
    }
    let description = top.str("description", Some(""), "a string")?;
    let sim = sim_section(&top)?;
    let duration = sim.duration_ns;
    let (phy, standard, width) = phy_section(&top)?;
    let std = &STANDARDS.iter().find(|s| s.0.name() == standard).expect("a checked standard").1;
    let mut cell = Cell { standard, std, width, duration, aggregation: false, max_mpdus: 0, driver: Driver::Pull };
    let mac = mac_section(&top, &mut cell)?;
    let ap = ap_section(&top, &mut cell)?;
    let wired = wired_section(&top)?;
    let channel = channel_section(&top)?;
    let stations = stations_section(&top, &cell)?;
    let (flows, overflow) = flows_section(&top, &cell, &stations)?;
    let n_max = if cell.aggregation { cell.max_mpdus } else { 1 };
    let (aggctl, agg_overflow) = aggctl_section(&top, &flows, n_max)?;
    let vwire = vwire_section(&top)?;
    let emu = if top.has("emu") {
        let et = Table::new(top.raw("emu"), "emu", "emu", "a table [emu]")?;
        Some(EmuSpec { ap_host: et.bool("ap_host", false)? })
    } else {
        None
    };
    // The first in the canonical JSON's order, where the simulator would stop reading.
    if let Some((path, value)) = agg_overflow.or(overflow) {
        // The simulator reads these counts as u64 (`spec.rs`); Python's integers are wider.
        return Err(SpecError::new(path, value, format!("an integer in 0..={}", u64::MAX)));
    }
    let seed = sim.seed;
    let station_group = stations.of.clone();
    let flow_table: Vec<usize> = flows.iter().enumerate().flat_map(|(i, f)| std::iter::repeat_n(i, f.sel.len())).collect();
    let spec = Spec {
        name: name.clone(),
        description,
        sim,
        phy,
        mac,
        ap,
        wired,
        stations: stations.of.iter().map(|&g| stations.groups[g].clone()).collect(),
        flows: flows.into_iter().flat_map(|t| t.sel.into_iter().map(move |s| FlowSpec { station: s as u32, ..t.f.clone() })).collect(),
        channel,
        aggctl,
        vwire,
        emu,
    };
    let json = spec_json(&spec, &station_group, &flow_table);
    Ok(Normalized { spec, json, station_group, flow_table, name, seed, duration_ns: duration })
}

/// `^[A-Za-z0-9][A-Za-z0-9._-]*$`
fn name_ok(name: &str) -> bool {
    let mut cs = name.chars();
    cs.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && cs.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

fn sim_section(top: &Table) -> Res<SimSpec> {
    if !top.has("sim") {
        return Err(SpecError::new(
            "sim.duration",
            "(missing)",
            "required: a [sim] table with duration, e.g. duration = \"10s\"",
        ));
    }
    let sim = Table::new(top.raw("sim"), "sim", "sim", "a table [sim]")?;
    let duration = sim.duration("duration", None, true)?;
    let warmup = sim.duration("warmup", Some(0), false)?;
    if warmup >= duration {
        return Err(sim.fail("warmup", "must be < sim.duration"));
    }
    let seed = sim.int("seed", 1, Some(0), Some(U64_MAX))? as u64;
    let bin_ns = sim.duration("bin", Some(100_000_000.min(duration)), true)?;
    if bin_ns > duration {
        return Err(sim.fail("bin", "must be <= sim.duration"));
    }
    if duration.div_ceil(bin_ns) > MAX_BINS {
        return Err(sim.fail("bin", format!("too small: at most {MAX_BINS} bins per run (duration / bin)")));
    }
    Ok(SimSpec { duration_ns: duration, warmup_ns: warmup, seed, bin_ns })
}

fn phy_section(top: &Table) -> Res<(PhySpec, String, i128)> {
    let phy = Table::new(top.has("phy").then(|| top.raw("phy")).flatten(), "phy", "phy", "a table [phy]")?;
    let names: Vec<&str> = STANDARDS.iter().map(|s| s.0.name()).collect();
    let standard = phy.choice("standard", Standard::Vht.name(), &names, "")?;
    let std = &STANDARDS.iter().find(|s| s.0.name() == standard).expect("a standard").1;
    let bands: Vec<String> = std.bands.iter().map(|&b| names::band_name(b)).collect();
    let bands: Vec<&str> = bands.iter().map(String::as_str).collect();
    let band = phy.choice("band", "5GHz", &bands, &format!(" for {standard}"))?;
    let width = phy.choice_int("channel_width", std.default_width, std.widths, &format!(" MHz for {standard}"))?;
    let gi = phy.choice_int("guard_interval", 800, std.guard_intervals, &format!(" ns for {standard}"))?;
    let control_rate = phy.rate("control_rate", Some(24_000_000))?;
    if !lasthop_wifi::phy::is_legacy_rate(control_rate) {
        let list: Vec<String> = CONTROL_RATES_MBPS.iter().map(|r| format!("{r}Mbps")).collect();
        return Err(phy.fail("control_rate", format!("a legacy OFDM rate: {}", list.join("|"))));
    }
    let v = PhySpec {
        standard: Standard::from_name(&standard).expect("a listed standard"),
        band: names::band_from_name(&band).expect("a listed band"),
        channel_width: width as u16,
        guard_interval: gi as u16,
        control_rate_bps: control_rate,
    };
    Ok((v, standard, width))
}

fn mac_section(top: &Table, cell: &mut Cell) -> Res<MacSpec> {
    let (standard, std) = (cell.standard.as_str(), cell.std);
    let mac = Table::new(top.has("mac").then(|| top.raw("mac")).flatten(), "mac", "mac", "a table [mac]")?;
    let aggregation = mac.bool("aggregation", standard != "ofdm")?;
    if standard == "ofdm" && aggregation {
        return Err(mac.fail("aggregation", "must be false for ofdm (no A-MPDU in Clause 17)"));
    }
    let bw = std.ba_window;
    let max_mpdus =
        mac.int_text("max_ampdu_mpdus", Some(64), 1, bw, &format!("an integer in 1..={bw} (the {standard} Block Ack window)"))?;
    let mb = std.max_ampdu_bytes;
    let max_bytes = mac.int_text(
        "max_ampdu_bytes",
        Some(0),
        0,
        mb,
        &format!("0 (the standard's maximum) or 1..={mb} for {standard}"),
    )?;
    let max_ppdu = mac.duration("max_ppdu_time", Some(5_484_000), true)?;
    if max_ppdu > std.max_ppdu_time_ns {
        return Err(mac.fail("max_ppdu_time", format!("0 < t <= {} for {standard}", ms(std.max_ppdu_time_ns))));
    }
    let retries = ranges::RETRY_LIMITS;
    let retry_limit = mac.int("retry_limit", 7, Some(*retries.start() as i128), Some(*retries.end() as i128))?;
    let beacon = mac.duration("beacon_interval", Some(102_400_000), false)?;
    if !ranges::beacon_interval_ok(beacon) {
        return Err(mac.fail(
            "beacon_interval",
            "\"0s\" (off) or 1 TU (1.024ms) ..= 65535 TU (67.10784s), IEEE 802.11-2020 §9.4.1.3",
        ));
    }
    let ac = mac.choice("access_category", "BE", &access_categories(), "")?;
    let (cw_min, cw_max, aifsn, txop) = edca_keys(&mac, crate::spec::AIFSN_MIN_STA)?;
    let eifs_after_collision = mac.bool("eifs_after_collision", false)?;
    let agg_min_rate = if mac.has("aggregation_min_rate") { mac.rate("aggregation_min_rate", Some(0))? } else { 0 };
    // A-MSDU: the largest Maximum A-MSDU Length of the amendment (HT 3839 or 7935, VHT/HE
    // 11454, IEEE 802.11-2020 §9.4.2.55.2 / Table 9-34); any value from HT's smaller one up.
    let amsdu_max: i128 = match standard {
        "ofdm" => 0,
        "ht" => 7935,
        _ => 11454,
    };
    let amsdu_text = if amsdu_max == 0 {
        "0 for ofdm (no A-MSDU here)".to_owned()
    } else {
        format!("0 (off) or 3839..={amsdu_max} for {standard}")
    };
    let max_amsdu = mac.int_text("max_amsdu_bytes", Some(0), 0, amsdu_max, &amsdu_text)?;
    if 0 < max_amsdu && max_amsdu < 3839 {
        return Err(mac.fail("max_amsdu_bytes", format!("0 (off) or 3839..={amsdu_max} for {standard}")));
    }
    if mac.has("aggregation_min_rate") && !aggregation {
        return Err(mac.fail("aggregation_min_rate", "only with aggregation = true"));
    }
    let rx_delivery = mac.pick("rx_delivery", RxDelivery::Subframe, "")?;
    let ampdu_formation = mac.pick("ampdu_formation", AmpduFormation::Access, "")?;
    let ofdma = if mac.has("ofdma") { Some(ofdma_table(&mac, cell)?) } else { None };
    cell.aggregation = aggregation;
    cell.max_mpdus = max_mpdus;
    Ok(MacSpec {
        aggregation,
        max_ampdu_mpdus: max_mpdus as u32,
        max_ampdu_bytes: max_bytes as u32,
        max_ppdu_time_ns: max_ppdu,
        retry_limit: retry_limit as u32,
        beacon_interval_ns: beacon,
        access_category: AccessCategory::parse(&ac).expect("a listed access category"),
        cw_min: cw_min.map(|x| x as u32),
        cw_max: cw_max.map(|x| x as u32),
        aifsn: aifsn.map(|x| x as u32),
        eifs_after_collision,
        aggregation_min_rate_bps: agg_min_rate,
        max_amsdu_bytes: max_amsdu as u32,
        rx_delivery,
        ampdu_formation,
        txop_limit_ns: txop,
        // Written only when given, so that a spec without it keeps its canonical form.
        ofdma,
    })
}


fn ap_section(top: &Table, cell: &mut Cell) -> Res<ApSpec> {
    let ap = Table::new(top.has("ap").then(|| top.raw("ap")).flatten(), "ap", "ap", "a table [ap]")?;
    let scheduler = ap.pick("scheduler", Scheduler::RoundRobin, "")?;
    let qdisc = ap.pick("qdisc", Qdisc::Fifo, "")?;
    // txqueuelen (1000) in front of a qdisc; mac80211's own flow queue holds 8192 (`fq_init`).
    let ap_queue = ap.int("queue_limit", if qdisc == Qdisc::FqCodel { 8192 } else { 1000 }, Some(1), Some(MAX_QUEUE))?;
    let driver = ap.pick("driver", Driver::Pull, "")?;
    let fw_keys = ["hw_queue_limit", "aql", "aql_limit_low", "aql_limit_high", "aql_threshold"];
    if !driver.hardware_queue() {
        if let Some(k) = fw_keys.iter().find(|k| ap.has(k)) {
            return Err(ap.fail(
                k,
                format!("only with driver = {} (the pull driver has no queue below the station queues)", crate::spec::drivers_text(true)),
            ));
        }
    }
    let hw_queue_limit = ap.int("hw_queue_limit", 1024, Some(1), Some(MAX_QUEUE))?;
    if driver != Driver::Ath9k && ap.has("ath9k_qdepth") {
        return Err(ap.fail("ath9k_qdepth", "only with driver = \"ath9k\" (the frames its driver holds below the queues)"));
    }
    let ath9k_qdepth = ap.int("ath9k_qdepth", crate::spec::ATH9K_QDEPTH as i128, Some(1), Some(MAX_QUEUE))?;
    let scopes = crate::spec::QDISC_SCOPES;
    let qdisc_scope = ap.choice("qdisc_scope", scopes[0], &scopes, "")?;
    if qdisc_scope != scopes[0] {
        if driver != Driver::Ath9k {
            return Err(ap.fail("qdisc_scope", "\"interface\" only with driver = \"ath9k\" (its stage takes the interface qdisc's frames)"));
        }
        if !matches!(qdisc, Qdisc::Fifo | Qdisc::Codel | Qdisc::Pie) {
            return Err(ap.fail("qdisc_scope", "\"interface\" only with qdisc = \"fifo\", \"codel\" or \"pie\""));
        }
    }
    let aql = ap.bool("aql", true)?;
    if !aql {
        if let Some(k) = fw_keys[2..].iter().find(|k| ap.has(k)) {
            return Err(ap.fail(k, "only with aql = true"));
        }
    }
    let aql_low = ap.duration("aql_limit_low", Some(5_000_000), true)?;
    let aql_high = ap.duration("aql_limit_high", Some(12_000_000), true)?;
    let aql_threshold = ap.duration("aql_threshold", Some(24_000_000), true)?;
    if aql_low > aql_high {
        return Err(ap.fail("aql_limit_low", format!("must be <= ap.aql_limit_high ({})", ms(aql_high))));
    }
    let buffer_sizer = ap.pick("buffer_sizer", BufferSizer::Off, "")?;
    if buffer_sizer != BufferSizer::Wqm {
        if let Some(k) = ["wqm_limit", "wqm_interval", "wqm_variant"].iter().find(|k| ap.has(k)) {
            return Err(ap.fail(k, "only with buffer_sizer = \"wqm\""));
        }
    } else if qdisc != Qdisc::Fifo {
        return Err(ap.fail("buffer_sizer", "\"wqm\" only with qdisc = \"fifo\" (WQM sizes a tail-drop buffer)"));
    } else if driver.hardware_queue() {
        return Err(ap.fail(
            "buffer_sizer",
            format!("\"wqm\" only with driver = {} (it sizes the queue the driver takes frames from)", crate::spec::pull_drivers_text()),
        ));
    }
    let wqm_limit = ap.duration("wqm_limit", Some(2_500_000), true)?;
    let wqm_interval = ap.duration("wqm_interval", Some(100_000_000), true)?;
    let wqm_variant = ap.pick("wqm_variant", WqmVariant::Aimd, "")?;
    if qdisc != Qdisc::Pie && ap.has("pie_estimator") {
        return Err(ap.fail("pie_estimator", "only with qdisc = \"pie\""));
    }
    let estimators: Vec<&str> = crate::spec::PIE_ESTIMATORS.iter().map(|(n, _)| *n).collect();
    let pie_estimator = ap.choice("pie_estimator", "timestamp", &estimators, "")?;
    let dequeue_cost = ap.duration("dequeue_cost", Some(0), false)?;
    if dequeue_cost > crate::spec::MAX_DEQUEUE_COST_NS {
        return Err(ap.fail("dequeue_cost", "at most 100us (a host's per-packet transmit path)"));
    }
    if qdisc != Qdisc::FqCodel && ap.has("fq_aqm") {
        return Err(ap.fail("fq_aqm", "only with qdisc = \"fq_codel\" (the AQM inside mac80211's flow queue)"));
    }
    let fq_aqm = ap.pick("fq_aqm", FqAqm::Codel, "")?;
    if fq_aqm == FqAqm::DualPi2 {
        if let Some(k) = ["ecn", "ce_threshold", "ce_threshold_l4s_only"].iter().find(|k| ap.has(k)) {
            return Err(ap.fail(k, "not with fq_aqm = \"dualpi2\" (it always marks, and its 1 ms L4S step is its threshold)"));
        }
    }
    let (ecn, ce_threshold, l4s_only, air) = ap_ecn(&ap, qdisc)?;
    let ack_filter = ap.choice("ack_filter", crate::spec::ACK_FILTERS[0], &crate::spec::ACK_FILTERS, "")?;
    if ack_filter != crate::spec::ACK_FILTERS[0] && qdisc != Qdisc::FqCodel {
        return Err(ap.fail("ack_filter", "\"off\" unless qdisc = \"fq_codel\" (the filter works in the flow queue, as sch_cake's)"));
    }
    let (ap_cw_min, ap_cw_max, ap_aifsn, ap_txop) = edca_keys(&ap, crate::spec::AIFSN_MIN_AP)?;
    let tcp_small_queues = ap.bool("tcp_small_queues", true)?;
    let rts = ap.choice("rts", RtsPolicy::NAMES[0], &RtsPolicy::NAMES, "")?;
    cell.driver = driver;
    Ok(ApSpec {
        queue_limit: ap_queue as u32,
        scheduler,
        qdisc,
        fq_aqm,
        driver,
        hw_queue_limit: hw_queue_limit as u32,
        ath9k_qdepth: ath9k_qdepth as u32,
        qdisc_scope,
        aql,
        aql_limit_low_ns: aql_low,
        aql_limit_high_ns: aql_high,
        aql_threshold_ns: aql_threshold,
        buffer_sizer,
        wqm_limit_ns: wqm_limit,
        wqm_interval_ns: wqm_interval,
        wqm_variant,
        pie_estimator,
        dequeue_cost_ns: dequeue_cost,
        ecn,
        ce_threshold_ns: ce_threshold,
        ce_threshold_l4s_only: l4s_only,
        air_ce_threshold_ns: air,
        ack_filter,
        cw_min: ap_cw_min.map(|x| x as u32),
        cw_max: ap_cw_max.map(|x| x as u32),
        aifsn: ap_aifsn.map(|x| x as u32),
        txop_limit_ns: ap_txop,
        tcp_small_queues,
        rts,
    })
}

fn wired_section(top: &Table) -> Res<WiredSpec> {
    let w = Table::new(top.has("wired").then(|| top.raw("wired")).flatten(), "wired", "wired", "a table [wired]")?;
    let rate = w.rate("rate", Some(10_000_000_000))?;
    let delay = w.duration("delay", Some(1_000_000), false)?;
    let queue = w.int("queue_limit", 1000, Some(1), Some(MAX_QUEUE))?;
    let loss = w.float("loss", 0.0, 0.0, 1.0, false)?;
    let loss_up = w.float_opt("loss_up", None, 0.0, 1.0, false)?;
    let qdisc = w.pick("qdisc", Qdisc::Fifo, "")?;
    let server_nic_bps = w.rate_opt("server_nic")?;
    Ok(WiredSpec { rate_bps: rate, delay_ns: delay, queue_limit: queue as u32, loss, loss_up, qdisc, server_nic_bps })
}

fn channel_section(top: &Table) -> Res<ChannelSpec> {
    let ch = Table::new(top.has("channel").then(|| top.raw("channel")).flatten(), "channel", "channel", "a table [channel]")?;
    let path_loss = ch.pick("path_loss", PathLoss::LogDistance, "")?;
    let exponent = ch.float("exponent", 3.5, ranges::EXPONENTS.0, ranges::EXPONENTS.1, true)?;
    if ch.has("exponent") && path_loss != PathLoss::LogDistance {
        return Err(ch.fail("exponent", "only with path_loss = \"log_distance\" (TGn models fix theirs)"));
    }
    let (lo, hi) = ranges::TX_POWERS_DBM;
    let tx_power = ch.float("tx_power_dbm", 20.0, lo, hi, true)?;
    let (lo, hi) = ranges::NOISE_FIGURES_DB;
    let noise_figure = ch.float("noise_figure_db", 7.0, lo, hi, true)?;
    let interference = if ch.has("interference") { Some(interference_table(&ch)?) } else { None };
    let fading = if ch.has("fading") { Some(fading_table(&ch)?) } else { None };
    Ok(ChannelSpec { path_loss, exponent, tx_power_dbm: tx_power, noise_figure_db: noise_figure, interference, fading })
}

/// `[channel.fading]`: the model, the Doppler spread and, for Rician fading only, its K-factor.
fn fading_table(ch: &Table) -> Res<FadingSpec> {
    let t = Table::new(ch.raw("fading"), "channel.fading", "channel.fading", "a table [channel.fading]")?;
    let model = t.pick("model", FadingModel::Rayleigh, "")?;
    let (lo, hi) = ranges::DOPPLERS_HZ;
    let doppler_hz = t.float_required("doppler_hz", lo, hi, true)?;
    let (lo, hi) = ranges::K_FACTORS_DB;
    let k_db = t.float_opt("k_db", None, lo, hi, true)?;
    match (model, k_db) {
        (FadingModel::Rician, None) => Err(t.fail("k_db", "a number in [-20, 40] (dB): Rician fading needs its K-factor")),
        (FadingModel::Rayleigh, Some(_)) => Err(t.fail("k_db", "only with model = \"rician\"")),
        _ => Ok(FadingSpec { model, doppler_hz, k_db }),
    }
}

/// `[channel.interference]`: the mean burst and gap (> 0) and the interference-to-noise ratio.
fn interference_table(ch: &Table) -> Res<InterferenceSpec> {
    let t = Table::new(ch.raw("interference"), "channel.interference", "channel.interference", "a table [channel.interference]")?;
    let on_ns = t.duration("on", None, true)?;
    let off_ns = t.duration("off", None, true)?;
    let (lo, hi) = ranges::INRS_DB;
    let inr_db = t.float_required("inr_db", lo, hi, true)?;
    Ok(InterferenceSpec { on_ns, off_ns, inr_db })
}

/// The tables of an array of tables `key` (None when absent), or the error naming it.
fn tables<'a>(top: &Table<'a>, key: &str, what: &str) -> Res<Option<&'a [Raw]>> {
    match top.raw(key) {
        None => Ok(None),
        Some(Raw::List(items)) if items.iter().all(|g| matches!(g, Raw::Table(_))) => Ok(Some(items)),
        Some(other) => Err(SpecError::new(key, show_value(other), what)),
    }
}

/// The access categories' names (`mac.access_category`, `flows[].ac`).
fn access_categories() -> Vec<&'static str> {
    lasthop_wifi::mac::edca::AccessCategory::ALL.iter().map(|a| a.name()).collect()
}

/// Python's `round(x)` to an integer (halves to even) of a non-negative finite float.
fn py_round(x: f64) -> u64 {
    let r = x.round_ties_even();
    r as u64
}

fn vwire_section(top: &Table) -> Res<Option<VwireSpec>> {
    if !top.has("vwire") {
        return Ok(None);
    }
    let vw = Table::new(top.raw("vwire"), "vwire", "vwire", "a table [vwire]")?;
    let relay = vw.int("relay_buffer", 4 << 20, Some(65536), Some(1 << 34))?;
    let enabled = vw.bool("enabled", true)?;
    let period = vw.duration("period", Some(2_000_000_000), true)?;
    let efficiency = vw.float("efficiency", 0.75, 0.0, 1.0, true)?;
    let sndbuf = vw.int_text("sndbuf", Some((256 << 10).min(relay)), 4096, relay, &format!("bytes in 4096..={relay} (relay_buffer)"))?;
    let tsq = vw.int("tsq", 1 << 20, Some(ranges::MIN_TSQ_BYTES as i128), Some(1 << 30))?;
    let sample = vw.duration("sample", Some(10_000_000), true)?;
    let work_conserving = vw.bool("work_conserving", true)?;
    let clamp = vw.int_text("window_clamp", Some(0), 0, relay, &format!("0 (none) or bytes in 4096..={relay} (relay_buffer)"))?;
    if clamp != 0 && clamp < 4096 {
        return Err(vw.fail("window_clamp", format!("0 (none) or bytes in 4096..={relay} (relay_buffer)")));
    }
    if efficiency <= 0.0 {
        return Err(vw.fail("efficiency", "0 < efficiency <= 1"));
    }
    Ok(Some(VwireSpec {
        enabled,
        period_ns: period,
        efficiency,
        relay_buffer_bytes: relay as u64,
        sndbuf_bytes: sndbuf as u64,
        tsq_bytes: tsq as u64,
        sample_ns: sample,
        work_conserving,
        window_clamp_bytes: clamp as u64,
    }))
}

/// [aggctl]: the allocator shared by the `pattern = "aggctl"` flows and their receivers'
/// estimators (docs/spec.md). Defaults: the paper's N_e 32, Δ 500 ms, K0 1 (Mb/s per packet).
fn aggctl_section(top: &Table, flows: &[FlowTable], n_max: i128) -> Res<(AggctlSpec, Option<(String, String)>)> {
    let a = Table::new(top.has("aggctl").then(|| top.raw("aggctl")).flatten(), "aggctl", "aggctl", "a table [aggctl]")?;
    // Which table's aggctl flow goes to each station (none: usize::MAX).
    let n_sta = flows.iter().flat_map(|f| f.sel.iter()).max().map_or(0, |m| m + 1);
    let mut seen = vec![usize::MAX; n_sta];
    let aggctl = |f: &&FlowTable| f.f.pattern == Pattern::Aggctl && !f.sel.is_empty();
    let first = flows.iter().find(aggctl);
    for (ti, f) in flows.iter().enumerate().filter(|(_, f)| aggctl(f)) {
        for &sta in &f.sel {
            if seen[sta] != usize::MAX {
                return Err(SpecError::new(
                    format!("flows[{ti}].stations"),
                    sta.to_string(),
                    format!("one aggctl flow per station (flows[{}] already goes there)", seen[sta]),
                ));
            }
            seen[sta] = ti;
            let size = f.f.packet_size;
            let want = first.expect("this one at least").f.packet_size;
            if size != want {
                return Err(SpecError::new(
                    format!("flows[{ti}].packet_size"),
                    size.to_string(),
                    format!("the same for every aggctl flow ({want})"),
                ));
            }
        }
    }
    let target = a.int_text(
        "target_aggregation",
        Some(32),
        1,
        n_max,
        &format!("an integer in 1..={n_max} (N_max: mac.max_ampdu_mpdus, or 1 without aggregation)"),
    )?;
    let interval = a.duration("interval", Some(500_000_000), true)?;
    let k0 = a.float("k0", 1.0, 0.0, 1000.0, true)?;
    if k0 == 0.0 {
        return Err(a.fail("k0", "a number in (0, 1000] (Mb/s per packet of aggregation error)"));
    }
    let min_rate = a.rate("min_rate", Some(1_000_000))?;
    let max_rate = a.rate("max_rate", Some(10_000_000_000))?;
    let initial = a.rate("initial_rate", Some(min_rate.max(10_000_000.min(max_rate))))?;
    if min_rate > max_rate {
        return Err(a.fail("min_rate", "must be <= aggctl.max_rate"));
    }
    if !(min_rate..=max_rate).contains(&initial) {
        return Err(a.fail("initial_rate", "must be within [aggctl.min_rate, aggctl.max_rate]"));
    }
    let allocation = a.choice("allocation", "equal_airtime", &ALLOCATIONS, "")?;
    // The defaults 2 × interval and 4 × interval can pass the u64 the simulator reads (Python's
    // integers do not overflow; the simulator then refuses the value at its normalized key).
    let hold = a.duration_wide("hold_time", 2 * interval as u128)?;
    if hold < interval as u128 {
        return Err(a.fail("hold_time", "must be >= aggctl.interval"));
    }
    let decay_after = a.duration_wide("decay_after", (4 * interval as u128).max(hold))?;
    if decay_after < hold {
        return Err(a.fail("decay_after", "must be >= aggctl.hold_time"));
    }
    let decay_factor = a.float("decay_factor", 0.5, 0.0, 1.0, false)?;
    if decay_factor == 0.0 {
        return Err(a.fail("decay_factor", "a number in (0, 1)"));
    }
    let gap = a.duration("gap_threshold", Some(50_000), true)?;
    let resolution = a.duration("clock_resolution", Some(1_000), true)?;
    let jitter = a.duration("clock_jitter", Some(0), false)?;
    if resolution > ranges::MAX_CLOCK_NS {
        return Err(a.fail("clock_resolution", "at most 1s"));
    }
    if jitter > ranges::MAX_CLOCK_NS {
        return Err(a.fail("clock_jitter", "at most 1s"));
    }
    let report_rate = a.bool("report_rate", true)?;
    let report_loss = a.float("report_loss", 0.0, 0.0, 1.0, false)?;
    let mut blackout = None;
    if a.has("report_blackout") {
        let allowed = "[from, until]: two durations with from < until, e.g. [\"25s\", \"30s\"]";
        let Some(Raw::List(l)) = a.raw("report_blackout") else { return Err(a.fail("report_blackout", allowed)) };
        if l.len() != 2 {
            return Err(a.fail("report_blackout", allowed));
        }
        let (Ok(from), Ok(until)) = (parse_duration(&l[0]), parse_duration(&l[1])) else {
            return Err(a.fail("report_blackout", allowed));
        };
        if from >= until {
            return Err(a.fail("report_blackout", allowed));
        }
        blackout = Some((from, until));
    }
    let over = [("aggctl.decay_after", decay_after), ("aggctl.hold_time", hold)]
        .into_iter()
        .find(|v| v.1 > u64::MAX as u128)
        .map(|(k, v)| (k.to_owned(), v.to_string()));
    let (hold, decay_after) = (hold.min(u64::MAX as u128) as u64, decay_after.min(u64::MAX as u128) as u64);
    let v = AggctlSpec {
        target_aggregation: target as u32,
        interval_ns: interval,
        k0,
        initial_rate_bps: initial,
        min_rate_bps: min_rate,
        max_rate_bps: max_rate,
        allocation,
        hold_time_ns: hold,
        decay_after_ns: decay_after,
        decay_factor,
        gap_threshold_ns: gap,
        clock_resolution_ns: resolution,
        clock_jitter_ns: jitter,
        report_rate,
        report_loss,
        report_blackout_ns: blackout,
    };
    Ok((v, over))
}
