//! The spec's lists of choices that the rules and the spec reader share, each written once: the
//! queue disciplines, the TCP congestion controllers and which ECN each reacts to, CUBIC's
//! slow-start exits, and the limits 802.11 puts on EDCA parameters.

use lasthop_algo::cc::cubic::HyStartVariant;

/// The smallest AIFSN an EDCA Parameter Set may give non-AP stations, and an AP may use for
/// itself (IEEE 802.11-2020 §9.4.2.28: "The minimum value of the AIFSN subfield is 2"; an AP
/// may use 1, §10.2.3.2).
pub const AIFSN_MIN_STA: u32 = 2;
pub const AIFSN_MIN_AP: u32 = 1;

/// The TXOP Limit field counts 32 µs in one octet (IEEE 802.11-2020 §9.4.2.28): 0..=8.16 ms.
pub const TXOP_UNIT_NS: u64 = 32_000;
pub const TXOP_MAX_NS: u64 = 255 * TXOP_UNIT_NS;

/// Problems of the EDCA values of `section` (mac: the set the AP advertises; ap: the AP's own):
/// CWmin and CWmax of the form 2^k − 1 up to 32767 (ECWmin/ECWmax in four bits), CWmin ≤
/// CWmax, AIFSN from `aifsn_min` to 15.
pub(super) fn edca_problems(section: &str, (cw_min, cw_max, aifsn, txop): (Option<u32>, Option<u32>, Option<u32>, Option<u64>), aifsn_min: u32, bad: &mut dyn FnMut(&str, String, String)) {
    if let Some(v) = txop.filter(|&v| v > TXOP_MAX_NS || v % TXOP_UNIT_NS != 0) {
        bad(&format!("{section}.txop_limit"), format!("{v}ns"), "a multiple of 32us up to 8.16ms".into());
    }
    let cw_ok = |v: u32| v <= 32767 && (v + 1).is_power_of_two();
    if let Some(v) = cw_min.filter(|&v| !cw_ok(v)) {
        bad(&format!("{section}.cw_min"), v.to_string(), "2^k - 1, at most 32767".into());
    }
    if let Some(v) = cw_max.filter(|&v| !cw_ok(v) || cw_min.is_some_and(|c| c > v)) {
        bad(&format!("{section}.cw_max"), v.to_string(), "2^k - 1, at most 32767, and >= cw_min".into());
    }
    if let Some(v) = aifsn.filter(|v| !(aifsn_min..=15).contains(v)) {
        bad(&format!("{section}.aifsn"), v.to_string(), format!("{aifsn_min}..=15"));
    }
}

/// The queue disciplines by name (`ap.qdisc`, `wired.qdisc`, `stations[].qdisc`).
pub const QDISCS: [&str; 5] = ["fifo", "codel", "pie", "fq_codel", "dualpi2"];

/// `QDISCS` as a message lists them.
pub(super) fn qdiscs_allowed() -> String {
    let names: Vec<String> = QDISCS.iter().map(|n| format!("{n:?}")).collect();
    format!("one of {}", names.join(", "))
}

/// `ap.ack_filter`: sch_cake's ACK filter modes (`ack-filter`, `ack-filter-aggressive`), off first.
pub const ACK_FILTERS: [&str; 3] = ["off", "conservative", "aggressive"];

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

/// `flows[].cc`: the TCP congestion controllers by name.
pub const CONGESTION_CONTROLS: [&str; 5] = ["newreno", "cubic", "bbr", "dctcp", "prague"];

/// `flows[].cc` of a QUIC flow: "cubic" is Chromium's CUBIC (the QUIC model's own, its default),
/// "prague" TCP Prague's controller over QUIC (L4S, with `ecn = "l4s"`; RFC 9002 §7 lets the
/// controller choose its reaction to CE).
pub const QUIC_CONGESTION_CONTROLS: [&str; 2] = ["cubic", "prague"];

/// The controller `name` with its defaults (None for an unknown name).
pub fn cc_named(name: &str) -> Option<lasthop_algo::cc::CcConfig> {
    use lasthop_algo::cc::*;
    Some(match name {
        "newreno" => CcConfig::NewReno(NewRenoConfig::default()),
        "cubic" => CcConfig::Cubic(CubicConfig::default()),
        "bbr" => CcConfig::Bbr(BbrConfig::default()),
        "dctcp" => CcConfig::Dctcp(DctcpConfig::default()),
        "prague" => CcConfig::Prague(PragueConfig::default()),
        _ => return None,
    })
}

/// `flows[].ecn` as a mode ("off" if it does not parse; `problems` reports that).
pub fn ecn_mode(name: &str) -> lasthop_algo::ecn::EcnMode {
    lasthop_algo::ecn::EcnMode::from_name(name).unwrap_or_default()
}

/// Why TCP controller `cc` cannot be used with ECN `ecn`, if it cannot: a flow whose packets
/// are ECN-capable needs a controller that slows down on marks.
pub fn ecn_mismatch(cc: &str, ecn: &str) -> Option<String> {
    ecn_mismatch_in(cc, ecn, &CONGESTION_CONTROLS)
}

/// [`ecn_mismatch`] among the controllers `names` (a QUIC flow's: [`QUIC_CONGESTION_CONTROLS`]).
pub fn ecn_mismatch_in(cc: &str, ecn: &str, names: &[&str]) -> Option<String> {
    let mode = lasthop_algo::ecn::EcnMode::from_name(ecn)?;
    let c = cc_named(cc)?;
    if c.reacts_to(mode) {
        return None;
    }
    let fit: Vec<String> = names
        .iter()
        .filter(|n| cc_named(n).is_some_and(|c| c.reacts_to(mode)))
        .map(|n| format!("{n:?}"))
        .collect();
    Some(if fit.is_empty() {
        format!("no controller here reacts to {ecn:?} ECN")
    } else {
        format!("cc = {cc:?} does not react to {ecn:?} ECN marks; with it use cc = {}", fit.join(" or "))
    })
}
