//! 802.11ax DL OFDMA (`[mac.ofdma]`, `world/ofdma.rs`): who shares a DL MU PPDU, the RUs they
//! ride, the goodput their RUs allow, and the acknowledgment's cost.

mod common;
use common::*;
use lasthop_wifi::phy::{RuSize, Standard, TxVector};
use serde_json::{json, Value};

const SEC: u64 = 1_000_000_000;

/// HE 80 MHz, `n` stations at HE-MCS 7 ×1, a saturated UDP download each, DL OFDMA on.
fn he80(n: u32, scheduler: &str, max_users: u32, ack: &str) -> Value {
    let mut s = base("he", 80, 800);
    s["mac"]["max_ampdu_mpdus"] = json!(256);
    s["mac"]["ofdma"] = json!({"dl": true, "ul": false, "scheduler": scheduler, "max_users": max_users, "ack": ack,
                               "mu_edca_aifsn": 8, "mu_edca_cw_min": 511, "mu_edca_cw_max": 1023, "mu_edca_timer_ns": 0});
    s["stations"] = json!((0..n).map(|_| station(7, 1)).collect::<Vec<_>>());
    s["flows"] = json!((0..n).map(|i| flow(i, "down", "saturated", 0, 1500, 2 * SEC)).collect::<Vec<_>>());
    s
}

fn goodput(d: &Value) -> f64 {
    d["flows"].as_array().unwrap().iter().map(|f| f["goodput_bps"].as_f64().unwrap()).sum()
}

#[test]
fn four_stations_ride_four_242_tone_rus_at_their_rate() {
    let d = run(&he80(4, "rr", 4, "mu-bar"), 1);
    let o = &d["ofdma"];
    assert!(o["mu_ppdus"].as_u64().unwrap() > 100, "{o}");
    assert_eq!(o["users_per_ppdu"].as_f64().unwrap(), 4.0);
    assert_eq!(o["ru_hist"], json!({"242": 4 * o["mu_ppdus"].as_u64().unwrap()}));
    // Each user's PHY rate on 242 tones: 234 · 6 · 5/6 bits per 13.6 µs symbol.
    let ru = TxVector::new(Standard::He, 7, 1, 80, 800).with_ru(RuSize::Tones242).data_rate_f64();
    assert!((ru - 1170.0 / 13.6e-6).abs() < 1.0, "{ru}");
    // Close to the four RUs' rate: PPDUs of ~5.4 ms, a few hundred µs of overhead per exchange,
    // MAC framing (1544 octets per 1500-octet packet).
    let g = goodput(&d);
    let top = 4.0 * ru * 1500.0 / 1544.0;
    assert!(g > 0.85 * top && g < top, "goodput {g} vs {top}");
    // Every station gets its share.
    for f in d["flows"].as_array().unwrap() {
        let x = f["goodput_bps"].as_f64().unwrap();
        assert!((x - g / 4.0).abs() < 0.02 * g, "{x} of {g}");
    }
}

#[test]
fn ns3s_equal_rus_serve_fewer_users_than_candidates() {
    let d = run(&he80(9, "rr", 9, "mu-bar"), 1);
    assert_eq!(d["ofdma"]["users_per_ppdu"].as_f64().unwrap(), 8.0);
    assert!(d["ofdma"]["ru_hist"]["106"].as_u64().unwrap() > 0);
    // The credits rotate the ninth station in: every station is served.
    for f in d["flows"].as_array().unwrap() {
        assert!(f["goodput_bps"].as_f64().unwrap() > 0.0);
    }
    let d = run(&he80(18, "rr", 18, "mu-bar"), 1);
    assert_eq!(d["ofdma"]["users_per_ppdu"].as_f64().unwrap(), 16.0);
    assert!(d["ofdma"]["ru_hist"]["52"].as_u64().unwrap() > 0);
}

#[test]
fn the_txq_scheduler_splits_the_band_for_every_candidate() {
    let d = run(&he80(3, "txq", 4, "mu-bar"), 1);
    let o = &d["ofdma"];
    let n = o["mu_ppdus"].as_u64().unwrap();
    assert!(n > 100);
    assert_eq!(o["users_per_ppdu"].as_f64().unwrap(), 3.0);
    assert_eq!(o["ru_hist"], json!({"484": n, "242": 2 * n}));
    // One station alone goes single-user.
    let d = run(&he80(1, "txq", 4, "mu-bar"), 1);
    assert_eq!(d["ofdma"]["mu_ppdus"].as_u64().unwrap(), 0);
    assert!(d["ofdma"]["su_ppdus"].as_u64().unwrap() > 100);
}

#[test]
fn block_ack_requests_in_turn_cost_more_than_a_mu_bar() {
    let mu_bar = run(&he80(8, "rr", 8, "mu-bar"), 1);
    let bar_ba = run(&he80(8, "rr", 8, "bar-ba"), 1);
    let ex = |d: &Value| d["ofdma"]["mean_exchange_ns"].as_f64().unwrap();
    // Seven BlockAckReq/BlockAck exchanges (SIFS + 32 µs + SIFS + 32 µs at 24 Mb/s) against one
    // HE TB PPDU.
    assert!(ex(&bar_ba) > ex(&mu_bar) + 7.0 * 80_000.0, "{} vs {}", ex(&bar_ba), ex(&mu_bar));
    assert!(goodput(&bar_ba) < goodput(&mu_bar));
}

#[test]
fn ofdma_runs_are_deterministic_and_off_leaves_no_section() {
    let s = he80(5, "txq", 4, "mu-bar");
    assert_eq!(run(&s, 3), run(&s, 3));
    let mut off = s.clone();
    off["mac"].as_object_mut().unwrap().remove("ofdma");
    assert!(run(&off, 3).get("ofdma").is_none());
}

#[test]
fn ofdma_needs_he_and_fits_the_channel() {
    let mut s = he80(2, "rr", 4, "mu-bar");
    s["phy"]["standard"] = json!("vht");
    let p = lasthop_sim::validate_json(&s.to_string());
    assert!(p.iter().any(|p| p.0 == "mac.ofdma"), "{p:?}");
    let mut s = he80(2, "rr", 38, "mu-bar");
    let p = lasthop_sim::validate_json(&s.to_string());
    assert!(p.iter().any(|p| p.0 == "mac.ofdma.max_users" && p.2.contains("1..=37")), "{p:?}");
    s["phy"]["channel_width"] = json!(160);
    assert!(lasthop_sim::validate_json(&s.to_string()).is_empty());
}

/// The emulator's side of the model (`world/hosts/ext.rs`): packets injected for three
/// stations of an OFDMA cell cross it as simulated ones do — the same deliveries and delays
/// — and each is reported at its subframe's end inside its DL MU PPDU.
#[test]
fn injected_packets_ride_dl_mu_ppdus_like_simulated_ones() {
    use lasthop_core::{Duration, Instant};
    use lasthop_sim::world::{Dir, ExtFate, World};
    let stop = 1_000_000_000u64;
    let mut spec = he80(3, "txq", 4, "mu-bar");
    spec["sim"]["duration_ns"] = json!(stop);
    spec["flows"] = json!([]);
    let mut sim = spec.clone();
    sim["flows"] = json!((0..3).map(|i| flow(i, "down", "cbr", 60_000_000, 1500, stop)).collect::<Vec<_>>());
    let d = run(&sim, 1);
    assert!(d["ofdma"]["mu_ppdus"].as_u64().unwrap() > 50);

    let s = spec.to_string();
    let mut w = World::new_realtime(lasthop_sim::Spec::from_json(&s).unwrap(), 1);
    let ext: Vec<u32> = (0..3).map(|i| w.add_external_flow(i, Dir::Down, format!("sta{i}"))).collect();
    let mut fates = Vec::new();
    // 1500-octet packets every 200 µs per station = 60 Mb/s each, as the simulated flows.
    for k in 0..5_000u32 {
        w.step_to(Instant::ZERO + Duration::from_micros(200) * k as u64);
        for (i, &f) in ext.iter().enumerate() {
            w.inject(f, 1500, k * 3 + i as u32);
        }
        w.drain_external(&mut fates);
    }
    w.step_to(Instant(stop));
    w.drain_external(&mut fates);
    w.finish_at(Instant(stop));
    let e = serde_json::to_value(lasthop_sim::output::collect(&w)).unwrap();
    for i in 0..3 {
        let (f, g) = (&d["flows"][i], &e["flows"][i]);
        assert_eq!(f["delivered_packets"], g["delivered_packets"], "station {i}");
        assert_eq!(f["delay_ns"]["mean"], g["delay_ns"]["mean"], "station {i}");
    }
    assert!(e["ofdma"]["users_per_ppdu"].as_f64().unwrap() > 1.5);
    assert!(fates.iter().filter(|x| x.fate == ExtFate::Received).count() > 1000);
}

/// `he80` with the uplink on (and the downlink as `dl` says), every flow `dir`.
fn he80_ul(n: u32, scheduler: &str, dl: bool, dir: &str, mu_edca_timer_ns: u64) -> Value {
    let mut s = he80(n, scheduler, n.min(4), "mu-bar");
    s["mac"]["ofdma"]["dl"] = json!(dl);
    s["mac"]["ofdma"]["ul"] = json!(true);
    s["mac"]["ofdma"]["mu_edca_timer_ns"] = json!(mu_edca_timer_ns);
    s["flows"] = json!((0..n).map(|i| flow(i, dir, "saturated", 0, 1500, 2 * SEC)).collect::<Vec<_>>());
    s
}

const MU_EDCA_TIMER: u64 = 255 * 8 * 1_024_000;

#[test]
fn a_basic_trigger_collects_four_uplinks_on_242_tone_rus() {
    let d = run(&he80_ul(4, "rr", false, "up", MU_EDCA_TIMER), 1);
    let ul = &d["ofdma"]["ul"];
    let t = ul["triggers"].as_u64().unwrap();
    assert!(t > 200, "{ul}");
    assert!(ul["users_per_trigger"].as_f64().unwrap() > 3.9, "{ul}");
    assert!(ul["ru_hist"]["242"].as_u64().unwrap() > 3 * t, "{ul}");
    assert_eq!(ul["tb_acked_frac"].as_f64().unwrap(), 1.0);
    let ru = TxVector::new(Standard::He, 7, 1, 80, 800).with_ru(RuSize::Tones242).data_rate_f64();
    let g = goodput(&d);
    let top = 4.0 * ru * 1500.0 / 1544.0;
    assert!(g > 0.8 * top && g < top, "goodput {g} vs {top}");
    // With MU EDCA the triggered stations hardly contend themselves; without it they do, and
    // collide.
    let off = run(&he80_ul(4, "rr", false, "up", 0), 1);
    let c = |d: &Value| d["stats"]["collisions"].as_u64().unwrap();
    assert!(c(&d) * 5 < c(&off), "{} vs {}", c(&d), c(&off));
    assert!(off["ofdma"]["ul"]["triggers"].as_u64().unwrap() < t);
}

/// MU EDCA with AIFSN 0 (§9.4.2.245): a triggered station's EDCA is disabled until its timer
/// expires, so after the first triggers the uplink goes in HE TB PPDUs only: no collisions,
/// where the hostapd set (AIFSN 8, CW 511) still leaves the stations some EDCA accesses.
#[test]
fn mu_edca_aifsn_0_leaves_the_uplink_to_the_triggers() {
    let contended = |aifsn: u32| {
        let mut s = he80_ul(4, "rr", false, "up", MU_EDCA_TIMER);
        s["mac"]["ofdma"]["mu_edca_aifsn"] = json!(aifsn);
        let d = run(&s, 1);
        // Uplink PSDUs less the RUs triggered (saturated: every one carries data): the
        // stations' own (EDCA) transmissions.
        let up: u64 = d["stations"].as_array().unwrap().iter()
            .map(|st| st["ampdu_hist_up"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).sum::<u64>()).sum();
        let rus: u64 = d["ofdma"]["ul"]["ru_hist"].as_object().unwrap().values().map(|c| c.as_u64().unwrap()).sum();
        let su_up = up - rus;
        eprintln!("mu_edca_aifsn {aifsn}: collisions {}, SU uplink PPDUs {su_up}, goodput {:.1} Mb/s, triggers {}",
                  d["stats"]["collisions"], goodput(&d) / 1e6, d["ofdma"]["ul"]["triggers"]);
        (d["stats"]["collisions"].as_u64().unwrap(), su_up, goodput(&d))
    };
    let (c0, su0, g0) = contended(0);
    let (c8, su8, g8) = contended(8);
    assert!(c0 <= 4 && c0 < c8, "collisions {c0} with EDCA disabled, {c8} with AIFSN 8");
    // Only before a station's first trigger (a few each).
    assert!(su0 <= 12 && su0 * 2 < su8, "SU uplink PPDUs {su0} vs {su8}");
    assert!(g0 >= g8 * 0.99, "goodput {g0} vs {g8}");
}

#[test]
fn downlink_and_uplink_take_turns() {
    let mut s = he80_ul(4, "txq", true, "up", MU_EDCA_TIMER);
    let mut flows: Vec<Value> = (0..4).map(|i| flow(i, "down", "saturated", 0, 1500, 2 * SEC)).collect();
    flows.extend((0..4).map(|i| flow(i, "up", "saturated", 0, 1500, 2 * SEC)));
    s["flows"] = json!(flows);
    let d = run(&s, 1);
    let o = &d["ofdma"];
    let (dl, ul) = (o["mu_ppdus"].as_u64().unwrap(), o["ul"]["triggers"].as_u64().unwrap());
    assert!(dl > 50 && ul > 50 && dl.abs_diff(ul) * 10 < dl + ul, "{o}");
    for f in d["flows"].as_array().unwrap() {
        assert!(f["goodput_bps"].as_f64().unwrap() > 10e6, "{f}");
    }
    assert_eq!(run(&s, 2), run(&s, 2));
}

/// Light uplinks: the AP learns the stations' queues from their frames or a BSRP Trigger frame,
/// and every packet gets through.
#[test]
fn light_uplinks_all_arrive() {
    let mut s = he80_ul(6, "txq", true, "up", MU_EDCA_TIMER);
    s["flows"] = json!((0..6).map(|i| flow(i, "up", "cbr", 2_000_000, 1000, 2 * SEC)).collect::<Vec<_>>());
    let d = run(&s, 1);
    for f in d["flows"].as_array().unwrap() {
        let (o, r) = (f["offered_packets"].as_u64().unwrap(), f["delivered_packets"].as_u64().unwrap());
        assert!(r + 5 >= o && r > 400, "{f}");
    }
}

/// TCP both ways over DL and UL OFDMA (the ACKs ride the other direction's PPDUs).
#[test]
fn tcp_crosses_dl_and_ul_ofdma() {
    let mut s = he80_ul(4, "txq", true, "up", MU_EDCA_TIMER);
    let mut flows: Vec<Value> = (0..2).map(|i| flow(i, "down", "tcp", 0, 1500, 2 * SEC)).collect();
    flows.extend((2..4).map(|i| flow(i, "up", "tcp", 0, 1500, 2 * SEC)));
    for f in flows.iter_mut() {
        f["cc"] = json!("cubic");
    }
    s["flows"] = json!(flows);
    let d = run(&s, 1);
    for f in d["flows"].as_array().unwrap() {
        assert!(f["goodput_bps"].as_f64().unwrap() > 20e6, "{}", f["goodput_bps"]);
    }
}

/// Every driver, scheduler and acknowledgment, with the uplink on and off, over a mixed cell
/// (TCP both ways, pings, light UDP, stations from HE-MCS 0 to 11, Minstrel over the SNR error
/// model on two of them): no packet is counted twice, most flows get through, and each run
/// repeats.
#[test]
fn ofdma_survives_mixed_cells() {
    let mcs = [11u32, 9, 7, 4, 1, 0, 5, 8];
    for (i, (driver, sched, ack, ul)) in [
        ("pull", "txq", "mu-bar", true),
        ("firmware", "txq", "bar-ba", true),
        ("mt76", "rr", "mu-bar", true),
        ("pull", "rr", "bar-ba", false),
        ("firmware", "rr", "mu-bar", true),
    ]
    .into_iter()
    .enumerate()
    {
        let mut s = he80(8, sched, 8, ack);
        s["sim"]["duration_ns"] = json!(SEC);
        s["ap"]["driver"] = json!(driver);
        // (Behind a shared FIFO the saturated download to the HE-MCS 0 station starves the
        // others' downloads, with or without OFDMA: mac80211's flow queue here.)
        s["ap"]["qdisc"] = json!("fq_codel");
        s["mac"]["ofdma"]["ul"] = json!(ul);
        s["mac"]["ofdma"]["mu_edca_timer_ns"] = json!(if i % 2 == 0 { MU_EDCA_TIMER } else { 0 });
        let mut st: Vec<Value> = mcs.iter().map(|&m| station(m, if m > 6 { 2 } else { 1 })).collect();
        for j in [2usize, 5] {
            st[j]["rate_control"] = json!("minstrel");
            st[j]["error_model"] = json!("snr");
            st[j]["snr_db"] = json!(22.0);
        }
        s["stations"] = json!(st);
        let mut flows = vec![flow(0, "down", "tcp", 0, 1500, SEC), flow(1, "up", "tcp", 0, 1500, SEC), flow(2, "down", "tcp", 0, 1500, SEC)];
        flows.push(flow(3, "up", "cbr", 2_000_000, 300, SEC));
        flows.push(flow(4, "down", "cbr", 1_000_000, 200, SEC));
        flows.push(flow(5, "down", "saturated", 0, 1500, SEC));
        flows.push(flow(6, "up", "saturated", 0, 1500, SEC));
        // A ping every 10 ms (its rate is its echo's octets per interval).
        flows.push(flow(7, "down", "ping", 84 * 8 * 100, 84, SEC));
        for f in flows.iter_mut().filter(|f| f["pattern"] == "tcp") {
            f["cc"] = json!("cubic");
        }
        s["flows"] = json!(flows);
        let a = run(&s, i as u64 + 1);
        assert_eq!(a, run(&s, i as u64 + 1), "case {i}");
        for f in a["flows"].as_array().unwrap() {
            let (o, r) = (f["offered_packets"].as_u64().unwrap(), f["delivered_packets"].as_u64().unwrap());
            let lost = ["dropped_queue", "dropped_retry", "dropped_wired"].iter().map(|k| f[k].as_u64().unwrap()).sum::<u64>();
            assert!(r + lost <= o, "case {i}: {f}");
        }
        let g: Vec<f64> = a["flows"].as_array().unwrap().iter().map(|f| f["goodput_bps"].as_f64().unwrap() / 1e6).collect();
        assert!(g.iter().filter(|&&x| x > 0.0).count() >= 5, "case {i}: {g:?}");
    }
}

/// An uplink user puts its whole transmit power into its RU's tones (`ul_ru_gain_db`): on a
/// 242-tone RU of an 80 MHz channel (996 tones) its SNR is 6.1 dB above the full band's, so at
/// a link SNR where HE-MCS 7 single-user loses most MPDUs, the same stations' HE TB PPDUs get
/// through; with the link 6.1 dB better, single-user does as well as the RUs did.
#[test]
fn an_uplink_ru_concentrates_the_stations_power() {
    let at = |snr: f64, ul: bool| {
        let mut s = he80_ul(4, "rr", false, "up", MU_EDCA_TIMER);
        for st in s["stations"].as_array_mut().unwrap() {
            st["error_model"] = json!("snr");
            st["snr_db"] = json!(snr);
        }
        if !ul {
            s["mac"].as_object_mut().unwrap().remove("ofdma");
        }
        run(&s, 1)
    };
    let snr = 19.0;
    let (mu, su) = (at(snr, true), at(snr, false));
    let acked = mu["ofdma"]["ul"]["tb_acked_frac"].as_f64().unwrap();
    println!("link {snr} dB: UL OFDMA {:.1} Mb/s (TB acked {acked:.3}), single-user {:.1} Mb/s", goodput(&mu) / 1e6, goodput(&su) / 1e6);
    assert!(goodput(&mu) > 3.0 * goodput(&su), "{} vs {}", goodput(&mu), goodput(&su));
    let gain = 10.0 * (996.0f64 / 242.0).log10();
    let su_better = at(snr + gain, false);
    println!("link {:.1} dB: single-user {:.1} Mb/s", snr + gain, goodput(&su_better) / 1e6);
    assert!(goodput(&su_better) > 3.0 * goodput(&su));
}
