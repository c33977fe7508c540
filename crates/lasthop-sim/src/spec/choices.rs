//! The spec's lists of choices that the rules and the spec reader share, each written once
//! (beside the value lists of `names.rs`): which ECN each congestion controller reacts to,
//! the QUIC model's controllers, CUBIC's slow-start exits, the ACK filter's modes, and the
//! limits 802.11 puts on EDCA parameters.

use super::names::{ecn_name, Cc};
use lasthop_algo::cc::cubic::HyStartVariant;
use lasthop_algo::ecn::EcnMode;

/// The smallest AIFSN an EDCA Parameter Set may give non-AP stations, and an AP may use for
/// itself (IEEE 802.11-2020 §9.4.2.28: "The minimum value of the AIFSN subfield is 2"; an AP
/// may use 1, §10.2.3.2).
pub const AIFSN_MIN_STA: u32 = 2;
pub const AIFSN_MIN_AP: u32 = 1;

/// The TXOP Limit field counts 32 µs in one octet (IEEE 802.11-2020 §9.4.2.28): 0..=8.16 ms.
pub const TXOP_UNIT_NS: u64 = 32_000;
pub const TXOP_MAX_NS: u64 = 255 * TXOP_UNIT_NS;

/// The EDCA values of `section` (mac: the set the AP advertises; ap: the AP's own).
pub(super) type Edca = (Option<u32>, Option<u32>, Option<u32>, Option<u64>);

/// CWmin and CWmax of the form 2^k − 1 up to 32767 (ECWmin/ECWmax in four bits).
fn cw_ok(v: u32) -> bool {
    v <= 32767 && (v + 1).is_power_of_two()
}

/// Each EDCA value's own range: the TXOP limit in the field's units, CWmin and CWmax of the form
/// 2^k − 1, AIFSN from `aifsn_min` to 15.
pub(super) fn edca_key_problems(section: &str, (cw_min, cw_max, aifsn, txop): Edca, aifsn_min: u32, bad: &mut dyn FnMut(&str, String, String)) {
    if let Some(v) = txop.filter(|&v| v > TXOP_MAX_NS || v % TXOP_UNIT_NS != 0) {
        bad(&format!("{section}.txop_limit"), format!("{v}ns"), "a multiple of 32us up to 8.16ms".into());
    }
    if let Some(v) = cw_min.filter(|&v| !cw_ok(v)) {
        bad(&format!("{section}.cw_min"), v.to_string(), "2^k - 1, at most 32767".into());
    }
    if let Some(v) = cw_max.filter(|&v| !cw_ok(v)) {
        bad(&format!("{section}.cw_max"), v.to_string(), "2^k - 1, at most 32767, and >= cw_min".into());
    }
    if let Some(v) = aifsn.filter(|v| !(aifsn_min..=15).contains(v)) {
        bad(&format!("{section}.aifsn"), v.to_string(), format!("{aifsn_min}..=15"));
    }
}

/// The EDCA rule across keys: CWmin ≤ CWmax (of valid values; the others are
/// [`edca_key_problems`]).
pub(super) fn edca_problems(section: &str, (cw_min, cw_max, _, _): Edca, bad: &mut dyn FnMut(&str, String, String)) {
    if let (Some(lo), Some(hi)) = (cw_min, cw_max) {
        if cw_ok(lo) && cw_ok(hi) && lo > hi {
            bad(&format!("{section}.cw_max"), hi.to_string(), "2^k - 1, at most 32767, and >= cw_min".into());
        }
    }
}

/// `ap.ack_filter`: sch_cake's ACK filter modes (`ack-filter`, `ack-filter-aggressive`), off first.
pub const ACK_FILTERS: [&str; 3] = ["off", "conservative", "aggressive"];

/// `ap.qdisc_scope`: one qdisc per next hop (mac80211's per-station queues), the default, or
/// one for the whole interface in front of the driver, as Linux before those queues (ath9k
/// before 4.10: every frame, whatever its next hop, through the netdev's one qdisc).
pub const QDISC_SCOPES: [&str; 2] = ["station", "interface"];

/// `flows[].send_buffer` (TCP bulk): "none" hands the sender all the application's data at once
/// (no socket buffer: a byte's delay starts when its segment is made); "linux" is Linux's
/// autotuned socket send buffer with a bulk writer (`lasthop_algo::tcp::sndbuf`), the byte's
/// delay starting at its `write()`. The default first.
pub const SEND_BUFFERS: [&str; 2] = ["none", "linux"];

/// `flows[].tso` (TCP): "off" sends one MSS-sized segment whenever cwnd allows; "linux-3.17"
/// sends as Linux 3.12–3.18 with TSO/GSO did, skbs of the autosized goal held back by
/// `tcp_tso_should_defer` (`lasthop_algo::tcp::sender`, `tso_defer`). The default first.
pub const TSOS: [&str; 2] = ["off", "linux-3.17"];

/// `flows[].pacer` (QUIC, when it paces): "per-packet" sends each packet at its own time, the
/// schedule the bquic paper measured at its server; "chromium-v39" keeps the schedule of
/// Chromium's `PacingSender` of the QUIC v39 era, lumps of up to 1 ms (`kAlarmGranularity`) with
/// lost time made up (`lasthop_algo::quic::pacer::PacerMode`). The default first.
pub const PACERS: [&str; 2] = lasthop_algo::quic::pacer::PacerMode::NAMES;

/// `flows[].hystart` (TCP CUBIC): the slow-start exits by name, the default first; `true` and
/// `false` stand for the default and "off".
pub const HYSTARTS: [&str; 3] = [HyStartVariant::NAMES[1], HyStartVariant::NAMES[0], "off"];

/// The slow-start exit `name` asks for (None: off).
pub fn hystart_variant(name: &str) -> Option<HyStartVariant> {
    HyStartVariant::from_name(name)
}

/// `hystart` in a typed spec: a name, or a boolean standing for the default (true) or "off"
/// (false), as the spec reader takes it.
pub(super) fn hystart_name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum NameOrBool {
        Name(String),
        Bool(bool),
    }
    Ok(match <NameOrBool as serde::Deserialize>::deserialize(d)? {
        NameOrBool::Name(n) => n,
        NameOrBool::Bool(b) => if b { HYSTARTS[0] } else { "off" }.into(),
    })
}

/// `flows[].cc` of a QUIC flow: "cubic" is Chromium's CUBIC (the QUIC model's own, its default),
/// "prague" TCP Prague's controller over QUIC (L4S, with `ecn = "l4s"`; RFC 9002 §7 lets the
/// controller choose its reaction to CE).
pub const QUIC_CONGESTION_CONTROLS: [Cc; 2] = [Cc::Cubic, Cc::Prague];

/// Why TCP controller `cc` cannot be used with ECN `ecn`, if it cannot: a flow whose packets
/// are ECN-capable needs a controller that slows down on marks.
pub fn ecn_mismatch(cc: Cc, ecn: EcnMode) -> Option<String> {
    ecn_mismatch_in(cc, ecn, Cc::ALL)
}

/// [`ecn_mismatch`] among the controllers `ccs` (a QUIC flow's: [`QUIC_CONGESTION_CONTROLS`]).
pub fn ecn_mismatch_in(cc: Cc, ecn: EcnMode, ccs: &[Cc]) -> Option<String> {
    if cc.config().reacts_to(ecn) {
        return None;
    }
    let fit: Vec<String> = ccs.iter().filter(|c| c.config().reacts_to(ecn)).map(|c| format!("{:?}", c.as_str())).collect();
    let ecn = ecn_name(ecn);
    Some(if fit.is_empty() {
        format!("no controller here reacts to {ecn:?} ECN")
    } else {
        format!("cc = {:?} does not react to {ecn:?} ECN marks; with it use cc = {}", cc.as_str(), fit.join(" or "))
    })
}
