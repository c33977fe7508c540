//! The `[[stations]]` tables: each group's keys checked and expanded per station (PHY rate or
//! rate control, error model, distance or SNR, mobility, a relay's parent and hop channel,
//! device, GRO), in the order the Python reader reports them.

use super::*;
use crate::spec::names::{ErrorModel, RateControl};
use lasthop_wifi::mac::exchange::RtsPolicy;

pub(super) fn stations_section(top: &Table, cell: &Cell) -> Res<Stations> {
    let required = "at least one [[stations]] table is required";
    let groups = match tables(top, "stations", "an array of tables [[stations]]")? {
        None => return Err(SpecError::new("stations", "(missing)", required)),
        Some([]) => return Err(SpecError::new("stations", "[]", required)),
        Some(g) => g,
    };
    let mut stations = Stations { groups: Vec::new(), of: Vec::new() };
    for (gi, g) in groups.iter().enumerate() {
        let t = Table::new(Some(g), &format!("stations[{gi}]"), "stations", "a table [[stations]]")?;
        let (count, v) = station(&t, cell, &stations)?;
        if stations.len() as i128 + count > MAX_STATIONS {
            return Err(t.fail("count", format!("at most {MAX_STATIONS} stations in total")));
        }
        stations.groups.push(v);
        stations.of.extend(std::iter::repeat_n(gi, count as usize));
    }
    for g in &stations.groups {
        if let Some(par) = g.parent {
            let q = stations.get(par as usize).qdisc;
            if q != Qdisc::Fifo {
                return Err(SpecError::new(
                    format!("stations[{}].qdisc", stations.of[par as usize]),
                    show_value(&Raw::Str(q.as_str().to_owned())),
                    "\"fifo\" for a relay (its interface queue is configured by [ap])",
                ));
            }
        }
    }
    Ok(stations)
}

/// One `[[stations]]` table: (count, the normalized station each of them is).
fn station(t: &Table, cell: &Cell, earlier: &Stations) -> Res<(i128, StationSpec)> {
    let (standard, std, width) = (cell.standard.as_str(), cell.std, cell.width);
    let count = t.int("count", 1, Some(1), Some(MAX_STATIONS))?;
    let rc = t.pick("rate_control", RateControl::Fixed, "")?;
    let fixed = rc == RateControl::Fixed;
    let mcs = if fixed {
        let m = std.mcs_max;
        let extra = if standard == "ofdm" { " (0..7 = 6, 9, 12, 18, 24, 36, 48, 54 Mb/s)" } else { "" };
        t.int_text("mcs", None, 0, m, &format!("an integer in 0..={m} for {standard}{extra}"))?
    } else if t.has("mcs") {
        return Err(t.fail("mcs", format!("only with rate_control = \"fixed\" (rate control \"{rc}\" picks it)")));
    } else {
        0
    };
    if !fixed && standard == "ofdm" {
        return Err(t.fail("rate_control", "\"fixed\" for ofdm (rate control covers HT/VHT/HE MCS)"));
    }
    let n = std.nss_max;
    let extra = if fixed { "" } else { " (the most streams rate control uses)" };
    let nss = t.int_text("nss", Some(1), 1, n, &format!("an integer in 1..={n} for {standard}{extra}"))?;
    if standard == "vht" && vht_invalid(width, mcs, nss) {
        return Err(t.fail("mcs", format!("VHT MCS {mcs} does not exist at {width} MHz with nss = {nss}")));
    }
    let (waypoints, repeat, placed) = placement(t)?;
    let model = t.pick("error_model", if placed { ErrorModel::Snr } else { ErrorModel::Off }, "")?;
    if placed && model != ErrorModel::Snr {
        return Err(t.fail("error_model", "\"snr\" for a station placed at a distance"));
    }
    let per = t.float("per", 0.0, 0.0, 1.0, false)?;
    if t.has("per") && model != ErrorModel::Fixed {
        return Err(t.fail("per", "only with error_model = \"fixed\""));
    }
    let (lo, hi) = ranges::SNRS_DB;
    let snr = t.float("snr_db", 30.0, lo, hi, true)?;
    if t.has("snr_db") && model != ErrorModel::Snr {
        return Err(t.fail("snr_db", "only with error_model = \"snr\""));
    }
    if t.has("snr_db") && placed {
        return Err(t.fail("snr_db", "not with a distance: the SNR follows from [channel]"));
    }
    if !fixed && model != ErrorModel::Snr {
        return Err(t.fail(
            "rate_control",
            "needs an SNR: set distance_m, walk_m, waypoints or error_model = \"snr\" with snr_db",
        ));
    }
    let queue = t.int("queue_limit", 1000, Some(1), Some(MAX_QUEUE))?;
    let sta_qdisc = t.pick("qdisc", Qdisc::Fifo, "")?;
    let first = earlier.len() as i128;
    let none_text = "nothing: the first station has no earlier station to relay for it";
    let parent_text = if first > 0 { format!("the index of an earlier station (0..={})", first - 1) } else { none_text.to_owned() };
    let parent = t.int_opt("parent", Some(None), Some(0), (first > 0).then(|| first - 1), Some(&parent_text))?;
    if t.has("parent") && first == 0 {
        return Err(t.fail("parent", none_text));
    }
    if parent.is_some() && cell.driver.hardware_queue() {
        return Err(t.fail("parent", format!("only with ap.driver = {} (relays are ath9k nodes)", crate::spec::pull_drivers_text())));
    }
    let hop_channel = t.int("hop_channel", 0, Some(0), Some(ranges::MAX_HOP_CHANNEL as i128))?;
    let device = t.choice("device", "unknown", &DEVICES, "")?;
    let gro = t.bool("gro", false)?;
    let tcp_small_queues = t.bool("tcp_small_queues", true)?;
    let weights = crate::spec::ranges::AIRTIME_WEIGHTS;
    let airtime_weight = t.int("airtime_weight", crate::spec::DEFAULT_AIRTIME_WEIGHT as i128, Some(*weights.start() as i128), Some(*weights.end() as i128))?;
    if parent.is_none() && hop_channel != 0 {
        return Err(t.fail(
            "hop_channel",
            "0 for a station associated with the AP (the AP has one radio, on channel 0)",
        ));
    }
    if let Some(p) = parent {
        let theirs = earlier.get(p as usize).hop_channel as i128;
        if cell.driver == Driver::Ath9k && hop_channel != theirs {
            return Err(t.fail(
                "hop_channel",
                format!("{theirs} (its parent's) with ap.driver = \"ath9k\": a relay has one driver stage, so one radio"),
            ));
        }
        if let Some(sib) = earlier.groups.iter().find(|s| s.parent == Some(p as u32)) {
            let theirs = sib.hop_channel as i128;
            if theirs != hop_channel {
                return Err(t.fail(
                    "hop_channel",
                    format!("{theirs} like the other stations behind station {p} (one radio per side of a relay)"),
                ));
            }
        }
    }
    let nss_change = nss_change(t, nss, fixed, mcs, width, standard, cell.duration)?;
    let ampdu_mpdus_tx = ampdu_limit(t, "ampdu_mpdus_tx", cell)?;
    let ba_window_rx = ampdu_limit(t, "ba_window_rx", cell)?;
    let rts = t.choice("rts", RtsPolicy::NAMES[0], &RtsPolicy::NAMES, "")?;
    // `device` is written only when given (default "unknown"), `gro` only when set,
    // `tcp_small_queues` only when off, `airtime_weight` only when not 256 (`StationSpec`'s
    // serialization).
    let v = StationSpec {
        mcs: mcs as u8,
        nss: nss as u8,
        error_model: model,
        per,
        snr_db: snr,
        queue_limit: queue as u32,
        qdisc: sta_qdisc,
        rate_control: rc,
        waypoints,
        repeat,
        parent: parent.map(|p| p as u32),
        hop_channel: hop_channel as u32,
        nss_change: nss_change.map(|(a, n)| (a, n as u8)),
        device,
        gro,
        tcp_small_queues,
        airtime_weight: airtime_weight as u32,
        ampdu_mpdus_tx,
        ba_window_rx,
        rts,
    };
    Ok((count, v))
}

/// A station's A-MPDU limit (`ampdu_mpdus_tx`, `ba_window_rx`): 0 (the cell's) or a count of
/// MPDUs up to the largest Block Ack window (HE's 256), at most the cell's
/// `mac.max_ampdu_mpdus`, and only where the cell aggregates.
fn ampdu_limit(t: &Table, key: &str, cell: &Cell) -> Res<u32> {
    let most = crate::spec::ranges::largest_ba_window() as i128;
    let v = t.int_text(key, Some(0), 0, most, &format!("0 (the cell's mac.max_ampdu_mpdus) or an integer in 1..={most}"))?;
    if v != 0 && !cell.aggregation {
        return Err(t.fail(key, "only with mac.aggregation = true"));
    }
    if v > cell.max_mpdus {
        return Err(t.fail(key, format!("at most mac.max_ampdu_mpdus ({}), or 0", cell.max_mpdus)));
    }
    Ok(v as u32)
}

/// `nss_change = [time, n]`: from `time` on the station uses at most `n` streams.
fn nss_change(t: &Table, nss: i128, fixed: bool, mcs: i128, width: i128, standard: &str, duration: u64) -> Res<Option<(u64, u64)>> {
    let Some(v) = t.raw("nss_change") else { return Ok(None) };
    let allowed = format!("[time, streams] with streams in 1..={nss} (at most nss), e.g. [\"20s\", 1]");
    let (at, n) = match v {
        Raw::List(l) if l.len() == 2 => match l[1] {
            Raw::Int(n) if (1..=nss).contains(&n) => (&l[0], n),
            _ => return Err(t.fail("nss_change", allowed)),
        },
        _ => return Err(t.fail("nss_change", allowed)),
    };
    let Ok(at) = parse_duration(at) else { return Err(t.fail("nss_change", allowed)) };
    if at > duration {
        return Err(t.fail("nss_change", "a time <= sim.duration"));
    }
    if fixed && standard == "vht" && vht_invalid(width, mcs, n) {
        return Err(t.fail("nss_change", format!("VHT MCS {mcs} does not exist at {width} MHz with nss = {n}")));
    }
    Ok(Some((at, n as u64)))
}

/// A station's distance schedule from one of `distance_m` (fixed), `walk_m` + `speed_mps`
/// (back and forth, forever) or `waypoints` (+ `repeat`): ([(ns, metres)], repeat, placed).
#[allow(clippy::type_complexity)]
fn placement(t: &Table) -> Res<(Vec<(u64, f64)>, bool, bool)> {
    let given: Vec<&str> = ["distance_m", "walk_m", "waypoints"].into_iter().filter(|k| t.has(k)).collect();
    if given.len() > 1 {
        return Err(t.fail(given[1], format!("only one of distance_m, walk_m, waypoints (also got {})", given[0])));
    }
    if t.has("speed_mps") && !t.has("walk_m") {
        return Err(t.fail("speed_mps", "only with walk_m"));
    }
    if t.has("repeat") && !t.has("waypoints") {
        return Err(t.fail("repeat", "only with waypoints"));
    }
    let dist_text = format!("a distance in metres, 0 < d <= {}", crate::spec_in::raw::fmt_g(MAX_DISTANCE_M));
    let metres = |v: &Raw, key: &str| -> Res<f64> {
        let f = match v {
            Raw::Int(i) => *i as f64,
            Raw::Float(f) => *f,
            _ => return Err(t.fail(key, dist_text.clone())),
        };
        if !(f.is_finite() && f > 0.0 && f <= MAX_DISTANCE_M) {
            return Err(t.fail(key, dist_text.clone()));
        }
        Ok(f)
    };
    if t.has("distance_m") {
        let d = metres(t.raw("distance_m").expect("present"), "distance_m")?;
        return Ok((vec![(0, d)], false, true));
    }
    if t.has("walk_m") {
        let allowed = "[near, far]: two distinct distances in metres, e.g. [1, 23]";
        let Some(Raw::List(l)) = t.raw("walk_m") else { return Err(t.fail("walk_m", allowed)) };
        if l.len() != 2 {
            return Err(t.fail("walk_m", allowed));
        }
        let (d1, d2) = (metres(&l[0], "walk_m")?, metres(&l[1], "walk_m")?);
        if d1 == d2 {
            return Err(t.fail("walk_m", allowed));
        }
        let speed = t.float("speed_mps", 1.0, 0.01, 100.0, true)?;
        let leg = py_round((d2 - d1).abs() / speed * 1e9);
        return Ok((vec![(0, d1), (leg, d2), (2 * leg, d1)], true, true));
    }
    if t.has("waypoints") {
        let allowed = "a list of [time, metres] pairs in time order, e.g. [[\"0s\", 1.0], [\"10s\", 23.0]]";
        let l = match t.raw("waypoints") {
            Some(Raw::List(l)) if !l.is_empty() => l,
            _ => return Err(t.fail("waypoints", allowed)),
        };
        let mut out: Vec<(u64, f64)> = Vec::new();
        for w in l {
            let Raw::List(pair) = w else { return Err(t.fail("waypoints", allowed)) };
            if pair.len() != 2 {
                return Err(t.fail("waypoints", allowed));
            }
            let Ok(ns) = parse_duration(&pair[0]) else { return Err(t.fail("waypoints", allowed)) };
            if out.last().is_some_and(|last| ns < last.0) {
                return Err(t.fail("waypoints", allowed));
            }
            out.push((ns, metres(&pair[1], "waypoints")?));
        }
        let repeat = t.bool("repeat", false)?;
        if repeat && out[out.len() - 1].0 == out[0].0 {
            return Err(t.fail("repeat", "a repeating schedule needs its last time after its first"));
        }
        return Ok((out, repeat, true));
    }
    Ok((Vec::new(), false, false))
}
