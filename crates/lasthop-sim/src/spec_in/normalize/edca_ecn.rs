//! Keys of `[mac]` and `[ap]` that come in groups: the EDCA values (the set the AP advertises,
//! the AP's own) and the AP's ECN marking.

use super::*;

/// The EDCA values of a section (`[mac]`: the set the AP advertises; `[ap]`: its own):
/// CWmin/CWmax of the form 2^k − 1, CWmin ≤ CWmax, AIFSN from `aifsn_min` (IEEE 802.11-2020
/// §9.4.2.28).
/// CWmin, CWmax, AIFSN and the TXOP limit (ns) of a section, each if given.
pub(super) type EdcaKeys = (Option<i128>, Option<i128>, Option<i128>, Option<u64>);

pub(super) fn edca_keys(t: &Table, aifsn_min: u32) -> Res<EdcaKeys> {
    let cw_text = "2^k - 1 for k in 0..=15 (0, 1, 3, 7, ..., 32767)";
    let cw_ok = |v: i128| (0..16).any(|k| (1i128 << k) - 1 == v);
    let cw_min = t.int_opt("cw_min", Some(None), None, None, Some(cw_text))?;
    if cw_min.is_some_and(|v| !cw_ok(v)) {
        return Err(t.fail("cw_min", cw_text));
    }
    let cw_max = t.int_opt("cw_max", Some(None), None, None, Some(cw_text))?;
    if cw_max.is_some_and(|v| !cw_ok(v)) {
        return Err(t.fail("cw_max", cw_text));
    }
    if let (Some(lo), Some(hi)) = (cw_min, cw_max) {
        if lo > hi {
            return Err(t.fail("cw_min", format!("must be <= {}.cw_max", t.key("").trim_end_matches('.'))));
        }
    }
    let aifsn = t.int_opt("aifsn", Some(None), Some(aifsn_min as i128), Some(15), None)?;
    let txop = t.duration_opt("txop_limit")?;
    if txop.is_some_and(|v| v > crate::spec::TXOP_MAX_NS || v % crate::spec::TXOP_UNIT_NS != 0) {
        return Err(t.fail("txop_limit", "a multiple of 32us up to 8.16ms (the TXOP Limit field, IEEE 802.11-2020 §9.4.2.28)"));
    }
    Ok((cw_min, cw_max, aifsn, txop))
}

/// `[ap]`'s ECN marking: whether the discipline marks (default: as Linux sets it up), CoDel's
/// CE threshold and its L4S selector, and the threshold of marking at the air.
pub(super) fn ap_ecn(ap: &Table, qdisc: Qdisc) -> Res<(Option<bool>, u64, bool, u64)> {
    if matches!(qdisc, Qdisc::Fifo | Qdisc::DualPi2) && ap.has("ecn") {
        return Err(ap.fail("ecn", "only with qdisc = \"codel\", \"pie\" or \"fq_codel\" (a FIFO never marks, DualPI2 always does)"));
    }
    let ecn = ap.bool_opt("ecn", None)?;
    let codel = matches!(qdisc, Qdisc::Codel | Qdisc::FqCodel);
    if !codel {
        if let Some(k) = ["ce_threshold", "ce_threshold_l4s_only"].iter().find(|k| ap.has(k)) {
            return Err(ap.fail(k, "only with qdisc = \"codel\" or \"fq_codel\" (CoDel's CE threshold)"));
        }
    }
    let ce_threshold = ap.duration("ce_threshold", Some(0), false)?;
    let l4s_only = ap.bool("ce_threshold_l4s_only", false)?;
    if l4s_only && ce_threshold == 0 {
        return Err(ap.fail("ce_threshold_l4s_only", "only with a ce_threshold > 0"));
    }
    let air = ap.duration("air_ce_threshold", Some(0), false)?;
    Ok((ecn, ce_threshold, l4s_only, air))
}
