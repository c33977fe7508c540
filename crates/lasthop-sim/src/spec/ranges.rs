//! Each key's own range, for a normalized spec that did not come through the spec reader
//! (`lasthop_sim::validate_json`, `run_json`, the emulator's request, the fuzz harness): the
//! reader checks these as it reads each key, with the same bounds (the constants and
//! predicates here, or beside the key's type), and `Spec::problems` holds only the rules
//! across keys.

use super::*;

/// `mac.retry_limit`: attempts per frame.
pub const RETRY_LIMITS: std::ops::RangeInclusive<u32> = 1..=64;

/// `mac.beacon_interval`: 1..=65535 time units of 1024 µs (the Beacon Interval field counts
/// them in two octets, 0 reserved, IEEE 802.11-2020 §9.4.1.3); 0 turns beacons off.
pub fn beacon_interval_ok(ns: u64) -> bool {
    const TU: u64 = 1_024_000;
    ns == 0 || (TU..=65_535 * TU).contains(&ns)
}

/// `channel.exponent`, `channel.tx_power_dbm`, `channel.noise_figure_db`: closed ranges.
pub const EXPONENTS: (f64, f64) = (1.0, 8.0);
pub const TX_POWERS_DBM: (f64, f64) = (-30.0, 40.0);
pub const NOISE_FIGURES_DB: (f64, f64) = (0.0, 30.0);
/// `stations[].snr_db`: a closed range.
pub const SNRS_DB: (f64, f64) = (-20.0, 100.0);
/// `channel.interference.inr_db`: the interference-to-noise ratio of a burst.
pub const INRS_DB: (f64, f64) = (-20.0, 60.0);
/// `channel.fading.doppler_hz`: 0 (a fixed draw per link) to a vehicle's 2 kHz.
pub const DOPPLERS_HZ: (f64, f64) = (0.0, 2000.0);
/// `channel.fading.k_db`: the Rician K-factor.
pub const K_FACTORS_DB: (f64, f64) = (-20.0, 40.0);
/// Why `[channel.fading]` needs a station whose errors follow its SNR.
pub const FADING_NEEDS_SNR: &str =
    "a station whose errors follow its SNR (error_model = \"snr\": snr_db, or placed at a distance): the fading varies that SNR";
/// Why `[channel.interference]` needs a station whose errors follow its SNR.
pub const INTERFERENCE_NEEDS_SNR: &str =
    "a station whose errors follow its SNR (error_model = \"snr\": snr_db, or placed at a distance): the interference lowers that SNR";
/// `stations[].waypoints` (and the other ways to place a station): the farthest distance, m.
pub const MAX_DISTANCE_M: f64 = 100_000.0;
/// `stations[].hop_channel`: the largest channel number.
pub const MAX_HOP_CHANNEL: u32 = 63;
/// The largest Block Ack window of any standard (HE's 256 MPDUs): the bound of a station's
/// `ampdu_mpdus_tx` and `ba_window_rx`.
pub fn largest_ba_window() -> u32 {
    lasthop_wifi::phy::ba_window(lasthop_wifi::phy::Standard::He) as u32
}

/// `stations[].airtime_weight` (µs): nl80211's `NL80211_ATTR_AIRTIME_WEIGHT`, a u16 of at least 1.
pub const AIRTIME_WEIGHTS: std::ops::RangeInclusive<u32> = 1..=65535;
/// `flows[].packet_size`: the largest frame body (MSDU) 802.11 carries.
pub const MAX_PACKET_SIZE: u32 = 2304;
/// `flows[].ack_policy` (QUIC).
pub const ACK_POLICIES: [&str; 3] = ["tcp_acking", "ack_decimation", "ack_frequency"];
/// `flows[].app_class` (vwire): the `AppClass` names.
pub const APP_CLASSES: [&str; 6] = ["video_sd", "video_hd", "video_4k", "bulk", "web", "voip"];
/// `stations[].device` (vwire classifier).
pub const DEVICES: [&str; 4] = ["unknown", "phone", "laptop", "tv"];
/// `aggctl.allocation`.
pub const ALLOCATIONS: [&str; 2] = ["equal_airtime", "per_station"];
/// `aggctl.clock_resolution` and `aggctl.clock_jitter`: at most 1 s.
pub const MAX_CLOCK_NS: u64 = 1_000_000_000;
/// `vwire.tsq`: two segments at least.
pub const MIN_TSQ_BYTES: u64 = 3000;

/// `mac.ofdma` with another standard than HE.
pub const OFDMA_HE_ONLY: &str = "only with phy.standard = \"he\" (OFDMA is 802.11ax's, IEEE 802.11ax-2021 §26.5)";
/// `mac.ofdma.mu_edca_cw_min`, `_cw_max`: 2^k − 1 (ECWmin/ECWmax, §9.4.2.245).
pub const MU_CW_TEXT: &str = "2^k - 1 for k in 0..=15 (0, 1, 3, 7, ..., 32767)";
pub fn cw_ok(v: u32) -> bool {
    (0..16).any(|k| (1u32 << k) - 1 == v)
}
/// `mac.ofdma.mu_edca_timer`: the MU EDCA Timer field counts units of 8 TU in one octet
/// (§9.4.2.245); 0 turns MU EDCA off. OpenWrt's hostapd writes 255.
pub const MU_EDCA_TIMER_UNIT_NS: u64 = 8 * 1_024_000;
pub const MU_EDCA_TIMER_DEFAULT_NS: u64 = 255 * MU_EDCA_TIMER_UNIT_NS;
pub const MU_EDCA_TIMER_TEXT: &str = "a multiple of 8 TU (8.192ms) up to 255 of them (2.08896s); \"0s\" turns MU EDCA off";
pub fn mu_edca_timer_ok(ns: u64) -> bool {
    ns.is_multiple_of(MU_EDCA_TIMER_UNIT_NS) && ns <= MU_EDCA_TIMER_DEFAULT_NS
}

/// `mac.ofdma.max_users`: at most the 26-tone RUs of the channel (IEEE 802.11ax-2021
/// §27.3.2.2: 9, 18, 37, 74 at 20, 40, 80, 160 MHz).
pub fn max_mu_users(width: u16) -> u32 {
    phy::RuSize::Tones26.count(width).max(1)
}

pub fn max_mu_users_text(width: u16) -> String {
    format!("an integer in 1..={} (the 26-tone RUs of a {width} MHz channel)", max_mu_users(width))
}

fn closed(v: f64, (lo, hi): (f64, f64)) -> bool {
    v.is_finite() && (lo..=hi).contains(&v)
}

impl Spec {
    /// Every problem of a normalized spec from anywhere: each key's own range
    /// ([`Spec::key_problems`]), then the rules across keys ([`Spec::problems`]).
    pub fn json_problems(&self) -> Vec<Problem> {
        let mut p = self.key_problems();
        p.extend(self.problems());
        p
    }

    /// The keys whose own value is out of range, in the order of the sections (the spec
    /// reader refuses each of these at its key; a spec it wrote has none).
    pub fn key_problems(&self) -> Vec<Problem> {
        let mut p: Vec<Problem> = Vec::new();
        let mut bad = |path: &str, value: String, allowed: String| p.push((path.to_string(), value, allowed));
        self.cell_key_problems(&mut bad);
        self.station_key_problems(&mut bad);
        self.flow_key_problems(&mut bad);
        self.vwire_aggctl_key_problems(&mut bad);
        p
    }

    /// `sim`, `phy`, `mac`, `ap`, `wired`, `channel`.
    fn cell_key_problems(&self, bad: &mut dyn FnMut(&str, String, String)) {
        if self.sim.duration_ns == 0 {
            bad("sim.duration", "0s".into(), "a duration > 0".into());
        }
        if !phy::is_legacy_rate(self.phy.control_rate_bps) {
            bad("phy.control_rate", format!("{}bps", self.phy.control_rate_bps), "one of 6, 9, 12, 18, 24, 36, 48, 54 Mbps".into());
        }
        let m = &self.mac;
        if !RETRY_LIMITS.contains(&m.retry_limit) {
            bad("mac.retry_limit", m.retry_limit.to_string(), "1..=64".into());
        }
        if !beacon_interval_ok(m.beacon_interval_ns) {
            bad("mac.beacon_interval", format!("{}ns", m.beacon_interval_ns), "0 (off) or 1..=65535 TU of 1.024 ms".into());
        }
        edca_key_problems("mac", (m.cw_min, m.cw_max, m.aifsn, m.txop_limit_ns), AIFSN_MIN_STA, bad);
        if let Some(o) = &m.ofdma {
            if self.phy.standard != Standard::He {
                bad("mac.ofdma", "a table".into(), OFDMA_HE_ONLY.into());
            }
            let w = self.phy.channel_width;
            if !(1..=max_mu_users(w)).contains(&o.max_users) {
                bad("mac.ofdma.max_users", o.max_users.to_string(), max_mu_users_text(w));
            }
            for (k, v) in [("mac.ofdma.mu_edca_cw_min", o.mu_edca_cw_min), ("mac.ofdma.mu_edca_cw_max", o.mu_edca_cw_max)] {
                if !cw_ok(v) {
                    bad(k, v.to_string(), MU_CW_TEXT.into());
                }
            }
            if o.mu_edca_aifsn > 15 {
                bad("mac.ofdma.mu_edca_aifsn", o.mu_edca_aifsn.to_string(), "0..=15".into());
            }
            if !mu_edca_timer_ok(o.mu_edca_timer_ns) {
                bad("mac.ofdma.mu_edca_timer", format!("{}ns", o.mu_edca_timer_ns), MU_EDCA_TIMER_TEXT.into());
            }
        }
        let a = &self.ap;
        edca_key_problems("ap", (a.cw_min, a.cw_max, a.aifsn, a.txop_limit_ns), AIFSN_MIN_AP, bad);
        if a.queue_limit == 0 {
            bad("ap.queue_limit", "0".into(), "at least 1 packet".into());
        }
        if a.hw_queue_limit == 0 {
            bad("ap.hw_queue_limit", "0".into(), "at least 1 packet".into());
        }
        if a.ath9k_qdepth == 0 {
            bad("ap.ath9k_qdepth", "0".into(), "at least 1 frame".into());
        } else if a.ath9k_qdepth != ATH9K_QDEPTH && a.driver != Driver::Ath9k {
            bad("ap.ath9k_qdepth", a.ath9k_qdepth.to_string(), "only with driver = \"ath9k\"".into());
        }
        if !QDISC_SCOPES.contains(&a.qdisc_scope.as_str()) {
            bad("ap.qdisc_scope", format!("{:?}", a.qdisc_scope), "\"station\" or \"interface\"".into());
        } else if a.qdisc_scope != QDISC_SCOPES[0] && (a.driver != Driver::Ath9k || !matches!(a.qdisc, Qdisc::Fifo | Qdisc::Codel | Qdisc::Pie)) {
            bad("ap.qdisc_scope", format!("{:?}", a.qdisc_scope), "\"interface\" only with driver = \"ath9k\" and qdisc \"fifo\", \"codel\" or \"pie\"".into());
        }
        if a.wqm_limit_ns == 0 {
            bad("ap.wqm_limit", "0ns".into(), "a duration > 0".into());
        }
        if a.wqm_interval_ns == 0 {
            bad("ap.wqm_interval", "0ns".into(), "a duration > 0".into());
        }
        if !PIE_ESTIMATORS.iter().any(|(n, _)| *n == a.pie_estimator) {
            bad("ap.pie_estimator", format!("{:?}", a.pie_estimator), "\"timestamp\" or \"dequeue_rate\"".into());
        }
        if a.dequeue_cost_ns > MAX_DEQUEUE_COST_NS {
            bad("ap.dequeue_cost", format!("{}ns", a.dequeue_cost_ns), "at most 100us (a host's per-packet transmit path)".into());
        }
        if RtsPolicy::from_name(&a.rts).is_none() {
            bad("ap.rts", format!("{:?}", a.rts), rts_choices());
        }
        let w = &self.wired;
        if w.rate_bps == 0 {
            bad("wired.rate", "0bps".into(), "a rate > 0".into());
        }
        if w.server_nic_bps == Some(0) {
            bad("wired.server_nic", "0bps".into(), "a rate > 0".into());
        }
        if !(0.0..1.0).contains(&w.loss) {
            bad("wired.loss", w.loss.to_string(), "a probability in [0, 1)".into());
        }
        if let Some(l) = w.loss_up.filter(|l| !(0.0..1.0).contains(l)) {
            bad("wired.loss_up", l.to_string(), "a probability in [0, 1)".into());
        }
        if w.queue_limit == 0 {
            bad("wired.queue_limit", "0".into(), "at least 1 packet".into());
        }
        let c = &self.channel;
        if !closed(c.exponent, EXPONENTS) {
            bad("channel.exponent", c.exponent.to_string(), "1..=8".into());
        }
        if !closed(c.tx_power_dbm, TX_POWERS_DBM) {
            bad("channel.tx_power_dbm", c.tx_power_dbm.to_string(), "-30..=40 dBm".into());
        }
        if !closed(c.noise_figure_db, NOISE_FIGURES_DB) {
            bad("channel.noise_figure_db", c.noise_figure_db.to_string(), "0..=30 dB".into());
        }
        if let Some(i) = &c.interference {
            for (k, v) in [("on", i.on_ns), ("off", i.off_ns)] {
                if v == 0 {
                    bad(&format!("channel.interference.{k}"), "0ns".into(), "a duration > 0".into());
                }
            }
            if !closed(i.inr_db, INRS_DB) {
                bad("channel.interference.inr_db", i.inr_db.to_string(), "-20..=60 dB".into());
            }
        }
        if let Some(f) = &c.fading {
            if !closed(f.doppler_hz, DOPPLERS_HZ) {
                bad("channel.fading.doppler_hz", f.doppler_hz.to_string(), "0..=2000 Hz".into());
            }
            match (f.model, f.k_db) {
                (super::names::FadingModel::Rician, Some(k)) if !closed(k, K_FACTORS_DB) => {
                    bad("channel.fading.k_db", k.to_string(), "-20..=40 dB".into())
                }
                (super::names::FadingModel::Rician, None) => bad("channel.fading.k_db", "null".into(), "a K-factor in dB for model = \"rician\"".into()),
                (super::names::FadingModel::Rayleigh, Some(k)) => bad("channel.fading.k_db", k.to_string(), "only with model = \"rician\"".into()),
                _ => {}
            }
        }
    }

    /// `stations` and each station's PER, SNR, queue, hop channel, waypoints, device.
    fn station_key_problems(&self, bad: &mut dyn FnMut(&str, String, String)) {
        if self.stations.is_empty() {
            bad("stations", "[]".into(), "at least one station".into());
        }
        for (i, st) in self.stations.iter().enumerate() {
            if st.error_model == ErrorModel::Fixed && !(0.0..1.0).contains(&st.per) {
                bad(&format!("stations[{i}].per"), st.per.to_string(), "a probability in [0, 1)".into());
            }
            if !closed(st.snr_db, SNRS_DB) {
                bad(&format!("stations[{i}].snr_db"), st.snr_db.to_string(), "-20..=100 dB".into());
            }
            if st.queue_limit == 0 {
                bad(&format!("stations[{i}].queue_limit"), "0".into(), "at least 1 packet".into());
            }
            if st.hop_channel > MAX_HOP_CHANNEL {
                bad(&format!("stations[{i}].hop_channel"), st.hop_channel.to_string(), "0..=63".into());
            }
            for (k, &(t, d)) in st.waypoints.iter().enumerate() {
                if !d.is_finite() || !(0.0..=MAX_DISTANCE_M).contains(&d) {
                    bad(&format!("stations[{i}].waypoints[{k}]"), d.to_string(), "a distance in 0..=100000 m".into());
                }
                if k > 0 && t < st.waypoints[k - 1].0 {
                    bad(&format!("stations[{i}].waypoints[{k}]"), format!("{t}ns"), "times in non-decreasing order".into());
                }
            }
            if !AIRTIME_WEIGHTS.contains(&st.airtime_weight) {
                bad(&format!("stations[{i}].airtime_weight"), st.airtime_weight.to_string(), "1..=65535 µs (nl80211's airtime weight)".into());
            }
            for (key, v) in [("ampdu_mpdus_tx", st.ampdu_mpdus_tx), ("ba_window_rx", st.ba_window_rx)] {
                if v > largest_ba_window() {
                    bad(&format!("stations[{i}].{key}"), v.to_string(), format!("0 (the cell's) or 1..={}", largest_ba_window()));
                }
            }
            if RtsPolicy::from_name(&st.rts).is_none() {
                bad(&format!("stations[{i}].rts"), format!("{:?}", st.rts), rts_choices());
            }
            if !DEVICES.contains(&st.device.as_str()) {
                bad(&format!("stations[{i}].device"), format!("{:?}", st.device), "one of \"unknown\", \"phone\", \"laptop\", \"tv\"".into());
            }
        }
    }

    /// `flows[i]`: rate, size, the QUIC counts and timers, the vwire class and utility.
    fn flow_key_problems(&self, bad: &mut dyn FnMut(&str, String, String)) {
        for (i, f) in self.flows.iter().enumerate() {
            match f.pattern {
                Pattern::Cbr | Pattern::Poisson if f.rate_bps == 0 => {
                    bad(&format!("flows[{i}].rate"), "0bps".into(), "a rate > 0".into());
                }
                Pattern::Ping if f.rate_bps == 0 => {
                    bad(&format!("flows[{i}].interval"), "0".into(), "an interval > 0".into());
                }
                _ => {}
            }
            if !(20..=MAX_PACKET_SIZE).contains(&f.packet_size) {
                bad(&format!("flows[{i}].packet_size"), f.packet_size.to_string(), "20..=2304 bytes".into());
            }
            if f.pattern == Pattern::Quic {
                quic_key_problems(i, f, bad);
            }
            if let Some(c) = f.app_class.as_ref().filter(|c| !APP_CLASSES.contains(&c.as_str())) {
                bad(&format!("flows[{i}].app_class"), format!("{c:?}"), "one of \"video_sd\", \"video_hd\", \"video_4k\", \"bulk\", \"web\", \"voip\"".into());
            }
            if let Some(u) = f.utility.as_ref().filter(|u| utility_of(u).validate().is_err()) {
                bad(&format!("flows[{i}].utility"), format!("{u:?}"), "step ladder with rates > 0 strictly increasing and utilities >= 0 non-decreasing, or log with weight > 0".into());
            }
        }
    }

    /// `[vwire]` and `[aggctl]`.
    fn vwire_aggctl_key_problems(&self, bad: &mut dyn FnMut(&str, String, String)) {
        let v = &self.vwire_or_default();
        if v.period_ns == 0 {
            bad("vwire.period", "0ns".into(), "a duration > 0".into());
        }
        if v.sample_ns == 0 {
            bad("vwire.sample", "0ns".into(), "a duration > 0".into());
        }
        if !(v.efficiency > 0.0 && v.efficiency <= 1.0) {
            bad("vwire.efficiency", v.efficiency.to_string(), "0 < efficiency <= 1".into());
        }
        if v.tsq_bytes < MIN_TSQ_BYTES {
            bad("vwire.tsq", v.tsq_bytes.to_string(), "at least 3000 bytes (two segments)".into());
        }
        let a = &self.aggctl;
        if !ALLOCATIONS.contains(&a.allocation.as_str()) {
            bad("aggctl.allocation", format!("{:?}", a.allocation), "\"equal_airtime\" or \"per_station\"".into());
        }
        if a.clock_resolution_ns == 0 || a.clock_resolution_ns > MAX_CLOCK_NS {
            bad("aggctl.clock_resolution", format!("{}ns", a.clock_resolution_ns), "1ns ..= 1s".into());
        }
        if a.clock_jitter_ns > MAX_CLOCK_NS {
            bad("aggctl.clock_jitter", format!("{}ns", a.clock_jitter_ns), "0 ..= 1s".into());
        }
        if !(0.0..1.0).contains(&a.report_loss) {
            bad("aggctl.report_loss", a.report_loss.to_string(), "a probability in [0, 1)".into());
        }
        if let Some((from, until)) = a.report_blackout_ns.filter(|(from, until)| from >= until) {
            bad("aggctl.report_blackout", format!("[{from}ns, {until}ns]"), "[from, until] with from < until".into());
        }
    }
}

/// A QUIC flow's own keys: ack policy, page objects, initial window, connections, idle timeout.
fn quic_key_problems(i: usize, f: &FlowSpec, bad: &mut dyn FnMut(&str, String, String)) {
    if let Some(a) = f.ack_policy.as_ref().filter(|a| !ACK_POLICIES.contains(&a.as_str())) {
        bad(&format!("flows[{i}].ack_policy"), format!("{a:?}"), "one of \"tcp_acking\", \"ack_decimation\", \"ack_frequency\"".into());
    }
    if f.objects.contains(&0) {
        bad(&format!("flows[{i}].objects"), "0".into(), "object sizes of at least 1 byte".into());
    }
    if f.initial_cwnd == 0 {
        bad(&format!("flows[{i}].initial_cwnd"), "0".into(), "at least 1 packet".into());
    }
    if f.connections == 0 || f.connections > 10_000 {
        bad(&format!("flows[{i}].connections"), f.connections.to_string(), "1..=10000".into());
    }
    if f.idle_timeout_ns == 0 {
        bad(&format!("flows[{i}].idle_timeout"), "0ns".into(), "a duration > 0".into());
    }
}

/// What an RTS policy may be, as a problem lists it: `one of "off", "ampdu", "always"`.
fn rts_choices() -> String {
    format!("one of {}", RtsPolicy::NAMES.map(|n| format!("{n:?}")).join(", "))
}
