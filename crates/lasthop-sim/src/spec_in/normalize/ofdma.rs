//! `[mac.ofdma]`: 802.11ax DL and UL OFDMA and the MU EDCA parameters triggered stations use,
//! read and held to their ranges (`spec::ranges` has the bounds the JSON path checks too).

use super::*;

/// `[mac.ofdma]` (IEEE 802.11ax-2021 §26.5): HE only.
pub(super) fn ofdma_table(mac: &Table, cell: &Cell) -> Res<OfdmaSpec> {
    if cell.standard != "he" {
        return Err(mac.fail("ofdma", ranges::OFDMA_HE_ONLY));
    }
    let t = Table::new(mac.raw("ofdma"), "mac.ofdma", "mac.ofdma", "a table [mac.ofdma]")?;
    let dl = t.bool("dl", true)?;
    let ul = t.bool("ul", false)?;
    let scheduler = t.pick("scheduler", MuScheduler::Txq, "")?;
    let hi = ranges::max_mu_users(cell.width as u16);
    let max_users = t.int_text("max_users", Some(4), 1, hi as i128, &ranges::max_mu_users_text(cell.width as u16))?;
    let ack = t.pick("ack", MuAck::MuBar, "")?;
    // The MU EDCA Parameter Set (IEEE 802.11ax-2021 §9.4.2.245), OpenWrt's hostapd defaults
    // for AC_BE (`he_mu_edca_ac_be_*`: AIFSN 8, ECWmin 9, ECWmax 10, timer 255 × 8 TU).
    let cw_text = ranges::MU_CW_TEXT;
    let cw_min = t.int_text("mu_edca_cw_min", Some(511), 0, 32767, cw_text)?;
    let cw_max = t.int_text("mu_edca_cw_max", Some(1023), 0, 32767, cw_text)?;
    for (k, v) in [("mu_edca_cw_min", cw_min), ("mu_edca_cw_max", cw_max)] {
        if !ranges::cw_ok(v as u32) {
            return Err(t.fail(k, cw_text));
        }
    }
    if cw_min > cw_max {
        return Err(t.fail("mu_edca_cw_min", "must be <= mac.ofdma.mu_edca_cw_max"));
    }
    // AIFSN 0: EDCA disabled until the MU EDCA timer expires (§9.4.2.245).
    let aifsn = t.int("mu_edca_aifsn", 8, Some(0), Some(15))?;
    let timer = t.duration("mu_edca_timer", Some(ranges::MU_EDCA_TIMER_DEFAULT_NS), false)?;
    if !ranges::mu_edca_timer_ok(timer) {
        return Err(t.fail("mu_edca_timer", ranges::MU_EDCA_TIMER_TEXT));
    }
    if !dl && !ul {
        return Err(t.fail("dl", "true, or ul = true (a [mac.ofdma] with neither does nothing)"));
    }
    Ok(OfdmaSpec {
        dl,
        ul,
        scheduler,
        max_users: max_users as u32,
        ack,
        mu_edca_aifsn: aifsn as u32,
        mu_edca_cw_min: cw_min as u32,
        mu_edca_cw_max: cw_max as u32,
        mu_edca_timer_ns: timer,
    })
}
