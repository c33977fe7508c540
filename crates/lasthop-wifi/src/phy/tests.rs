//! Tests of the PHY tables against the independent reference vectors in `reference/phy/`
//! (produced by `reference/phy/derive.py` from the IEEE 802.11 formulas) and hand-checked
//! anchors.

use super::*;
use lasthop_core::Duration;

const RATES_CSV: &str = include_str!("../../../../reference/phy/rates.csv");
const DURATIONS_CSV: &str = include_str!("../../../../reference/phy/durations.csv");

fn rows(csv: &str) -> impl Iterator<Item = Vec<&str>> {
    csv.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split(',').collect())
}

fn tx_of(f: &[&str]) -> TxVector {
    TxVector {
        standard: Standard::from_name(f[0]).expect("standard"),
        mcs: f[1].parse().unwrap(),
        nss: f[2].parse().unwrap(),
        channel_width: f[3].parse().unwrap(),
        guard_interval: f[4].parse().unwrap(),
        ru: None,
    }
}

#[test]
fn rates_match_reference_exactly() {
    let mut n = 0;
    for f in rows(RATES_CSV) {
        assert_eq!(f.len(), 7);
        let tx = tx_of(&f);
        assert_eq!(tx.validate(), Ok(()), "{tx:?}");
        let n_dbps: u32 = f[5].parse().unwrap();
        let rate: u64 = f[6].parse().unwrap();
        assert_eq!(tx.n_dbps(), n_dbps, "n_dbps {tx:?}");
        assert_eq!(tx.data_rate_bps(), rate, "rate {tx:?}");
        assert!((tx.data_rate_f64() - rate as f64).abs() < 1.0 + 1e-9 * rate as f64);
        n += 1;
    }
    assert!(n > 1000, "only {n} rate rows");
}

#[test]
fn durations_match_reference_exactly() {
    let mut n = 0;
    for f in rows(DURATIONS_CSV) {
        assert_eq!(f.len(), 8);
        let tx = tx_of(&f);
        let band = Band::from_name(f[5]).expect("band");
        let bytes: u32 = f[6].parse().unwrap();
        let want: u64 = f[7].parse().unwrap();
        assert_eq!(
            ppdu_duration(&tx, bytes, band),
            Duration(want),
            "{tx:?} {band:?} {bytes} bytes"
        );
        if tx.standard == Standard::Ofdm {
            let rate = LEGACY_RATES[tx.mcs as usize];
            assert_eq!(legacy_duration(rate, bytes, band), Duration(want));
        }
        n += 1;
    }
    assert!(n >= 40, "only {n} duration rows");
}

#[test]
fn hand_checked_anchors() {
    let r = |s, m, n, w, g| TxVector::new(s, m, n, w, g).data_rate_bps();
    assert_eq!(r(Standard::Ht, 7, 1, 20, 800), 65_000_000);
    assert_eq!(r(Standard::Ht, 7, 3, 40, 400), 450_000_000);
    assert_eq!(r(Standard::Vht, 9, 1, 80, 400), 433_333_333);
    assert_eq!(r(Standard::Vht, 9, 2, 80, 800), 780_000_000);
    assert_eq!(r(Standard::He, 11, 1, 80, 800), 600_490_196);
    assert_eq!(r(Standard::He, 11, 2, 80, 800), 1_200_980_392);
    for (i, &rate) in LEGACY_RATES.iter().enumerate() {
        assert_eq!(TxVector::ofdm(i as u8).data_rate_bps(), rate);
        assert!(is_legacy_rate(rate));
    }
    assert!(!is_legacy_rate(11_000_000));
    // Ack (14 B) and compressed Block Ack (32 B) at 24 Mb/s in 5 GHz.
    assert_eq!(
        legacy_duration(24_000_000, 14, Band::Ghz5),
        Duration::from_micros(28)
    );
    assert_eq!(
        legacy_duration(24_000_000, 32, Band::Ghz5),
        Duration::from_micros(32)
    );
    assert_eq!(
        legacy_duration(24_000_000, 14, Band::Ghz2_4),
        Duration::from_micros(34)
    );
    assert_eq!(
        legacy_duration(6_000_000, 4095, Band::Ghz5),
        max_ppdu_time(Standard::Ofdm)
    );
    // Symbol durations.
    let sym = |s, g| TxVector::new(s, 0, 1, 20, g).symbol_duration().as_nanos();
    assert_eq!(sym(Standard::Ofdm, 800), 4000);
    assert_eq!(sym(Standard::Ht, 400), 3600);
    assert_eq!(sym(Standard::Vht, 800), 4000);
    assert_eq!(sym(Standard::He, 800), 13_600);
    assert_eq!(sym(Standard::He, 1600), 14_400);
    assert_eq!(sym(Standard::He, 3200), 16_000);
    // N_ES from the VHT tables, including the entries where the count is raised.
    let nes = |s, m, n, w| TxVector::new(s, m, n, w, 800).n_es();
    assert_eq!(nes(Standard::Vht, 9, 1, 80), 1);
    assert_eq!(nes(Standard::Vht, 9, 2, 80), 2);
    assert_eq!(nes(Standard::Vht, 2, 7, 80), 3);
    assert_eq!(nes(Standard::Vht, 7, 7, 80), 6);
    assert_eq!(nes(Standard::Vht, 7, 4, 160), 6);
    assert_eq!(nes(Standard::Vht, 5, 7, 160), 7);
    assert_eq!(nes(Standard::Vht, 9, 7, 160), 12);
    assert_eq!(nes(Standard::Ht, 7, 2, 40), 1);
    assert_eq!(nes(Standard::Ht, 5, 3, 40), 2);
}

#[test]
fn vht_encoder_split_is_integral_for_every_valid_combination() {
    for &w in valid_widths(Standard::Vht) {
        for nss in 1..=8 {
            for mcs in 0..=9 {
                let tx = TxVector::new(Standard::Vht, mcs, nss, w, 800);
                if tx.validate().is_err() {
                    continue;
                }
                let e = tx.n_es();
                assert_eq!(tx.n_dbps() % e, 0, "{tx:?}");
                assert_eq!(tx.n_cbps() % e, 0, "{tx:?}");
            }
        }
    }
}

#[test]
fn vht_invalid_set_is_exactly_the_standards_list() {
    let mut invalid = Vec::new();
    for &w in valid_widths(Standard::Vht) {
        for nss in 1..=8u8 {
            for mcs in 0..=9u8 {
                for &gi in valid_guard_intervals(Standard::Vht) {
                    let tx = TxVector::new(Standard::Vht, mcs, nss, w, gi);
                    if let Err(e) = tx.validate() {
                        assert_eq!(e.field, "mcs");
                        assert!(e.allowed.contains("not defined"), "{}", e.allowed);
                        if gi == 800 {
                            invalid.push((w, mcs, nss));
                        }
                    }
                }
            }
        }
    }
    let want = vec![
        (20, 9, 1),
        (20, 9, 2),
        (20, 9, 4),
        (20, 9, 5),
        (20, 9, 7),
        (20, 9, 8),
        (80, 6, 3),
        (80, 6, 7),
        (80, 9, 6),
        (160, 9, 3),
    ];
    invalid.sort_unstable();
    assert_eq!(invalid, want);
    let e = TxVector::new(Standard::Vht, 9, 1, 20, 800)
        .validate()
        .unwrap_err();
    assert_eq!(
        e.allowed,
        "VHT MCS 0..=9; MCS 9 is not defined at 20 MHz with NSS 1,2,4,5,7,8"
    );
}

#[test]
fn validate_rejects_out_of_range_fields() {
    let bad = |tx: TxVector, field: &str| {
        let e = tx.validate().expect_err("should be rejected");
        assert_eq!(e.field, field, "{tx:?}: {e}");
        assert!(!e.allowed.is_empty());
    };
    bad(TxVector::ofdm(8), "mcs");
    bad(
        TxVector {
            nss: 2,
            ..TxVector::ofdm(0)
        },
        "nss",
    );
    bad(
        TxVector {
            channel_width: 40,
            ..TxVector::ofdm(0)
        },
        "channel_width",
    );
    bad(
        TxVector {
            guard_interval: 400,
            ..TxVector::ofdm(0)
        },
        "guard_interval",
    );
    bad(TxVector::new(Standard::Ht, 8, 1, 20, 800), "mcs");
    bad(TxVector::new(Standard::Ht, 0, 5, 20, 800), "nss");
    bad(TxVector::new(Standard::Ht, 0, 0, 20, 800), "nss");
    bad(TxVector::new(Standard::Ht, 0, 1, 80, 800), "channel_width");
    bad(
        TxVector::new(Standard::Ht, 0, 1, 20, 1600),
        "guard_interval",
    );
    bad(TxVector::new(Standard::Vht, 10, 1, 80, 800), "mcs");
    bad(TxVector::new(Standard::Vht, 0, 9, 80, 800), "nss");
    bad(
        TxVector::new(Standard::Vht, 0, 1, 320, 800),
        "channel_width",
    );
    bad(
        TxVector::new(Standard::Vht, 0, 1, 80, 3200),
        "guard_interval",
    );
    bad(TxVector::new(Standard::He, 12, 1, 80, 800), "mcs");
    bad(TxVector::new(Standard::He, 0, 9, 80, 800), "nss");
    bad(TxVector::new(Standard::He, 0, 1, 30, 800), "channel_width");
    bad(TxVector::new(Standard::He, 0, 1, 80, 400), "guard_interval");
    // Every HT and HE combination in range is valid.
    for &w in valid_widths(Standard::He) {
        for nss in 1..=max_nss(Standard::He) {
            for mcs in 0..=max_mcs(Standard::He) {
                for &gi in valid_guard_intervals(Standard::He) {
                    assert_eq!(
                        TxVector::new(Standard::He, mcs, nss, w, gi).validate(),
                        Ok(())
                    );
                }
            }
        }
    }
}

#[test]
fn durations_are_monotone_and_consistent() {
    let tx = TxVector::new(Standard::Vht, 9, 2, 80, 400);
    let mut prev = Duration::ZERO;
    for len in (0..20_000).step_by(37) {
        let d = ppdu_duration(&tx, len, Band::Ghz5);
        assert!(d >= prev);
        // Short-GI TXTIME is aligned to 4 µs.
        assert_eq!(d.as_nanos() % 4000, 0);
        prev = d;
    }
    // 2.4 GHz adds the 6 µs signal extension; 6 GHz equals 5 GHz.
    for tx in [
        TxVector::new(Standard::Ht, 7, 2, 40, 400),
        TxVector::new(Standard::He, 11, 2, 80, 800),
    ] {
        let d5 = ppdu_duration(&tx, 1500, Band::Ghz5);
        assert_eq!(ppdu_duration(&tx, 1500, Band::Ghz6), d5);
        assert_eq!(
            ppdu_duration(&tx, 1500, Band::Ghz2_4),
            d5 + Duration::from_micros(6)
        );
    }
    // A max-size VHT A-MPDU at the top rate fits aPPDUMaxTime.
    let vht = TxVector::new(Standard::Vht, 9, 8, 160, 400);
    assert!(
        ppdu_duration(&vht, max_ampdu_bytes(Standard::Vht), Band::Ghz5)
            <= max_ppdu_time(Standard::Vht)
    );
}

#[test]
fn mac_constants() {
    for s in [Standard::Ofdm, Standard::Ht, Standard::Vht, Standard::He] {
        let t5 = mac_timing(s, Band::Ghz5);
        assert_eq!(t5.slot, Duration::from_micros(9));
        assert_eq!(t5.sifs, Duration::from_micros(16));
        assert_eq!(t5.difs(), Duration::from_micros(34));
        assert_eq!(mac_timing(s, Band::Ghz6), t5);
        let t24 = mac_timing(s, Band::Ghz2_4);
        assert_eq!(t24.slot, Duration::from_micros(9));
        assert_eq!(t24.sifs, Duration::from_micros(10));
    }
    assert_eq!(ba_window(Standard::Ofdm), 1);
    assert_eq!(ba_window(Standard::Ht), 64);
    assert_eq!(ba_window(Standard::Vht), 64);
    assert_eq!(ba_window(Standard::He), 256);
    assert_eq!(max_ampdu_bytes(Standard::Ofdm), 0);
    assert_eq!(max_ampdu_bytes(Standard::Ht), 65_535);
    assert_eq!(max_ampdu_bytes(Standard::Vht), 1_048_575);
    assert_eq!(max_ampdu_bytes(Standard::He), 6_500_631);
    assert_eq!(max_ppdu_time(Standard::Ht), Duration::from_millis(10));
    assert_eq!(max_ppdu_time(Standard::Vht), Duration::from_micros(5484));
    assert_eq!(max_ppdu_time(Standard::He), Duration::from_micros(5484));
    assert_eq!((max_mcs(Standard::Ofdm), max_nss(Standard::Ofdm)), (7, 1));
    assert_eq!((max_mcs(Standard::Ht), max_nss(Standard::Ht)), (7, 4));
    assert_eq!((max_mcs(Standard::Vht), max_nss(Standard::Vht)), (9, 8));
    assert_eq!((max_mcs(Standard::He), max_nss(Standard::He)), (11, 8));
}

// ---- HE resource units, HE MU and HE TB PPDUs (802.11ax-2021) ----

const WIDTHS: [u16; 4] = [20, 40, 80, 160];

#[test]
fn ru_sizes_follow_the_ru_tables() {
    let tones: Vec<u16> = RuSize::ALL.iter().map(|r| r.tones()).collect();
    assert_eq!(tones, [26, 52, 106, 242, 484, 996, 1992]);
    let nsd: Vec<u32> = RuSize::ALL.iter().map(|r| r.n_sd()).collect();
    assert_eq!(nsd, [24, 48, 102, 234, 468, 980, 1960]);
    let names: Vec<&str> = RuSize::ALL.iter().map(|r| r.name()).collect();
    assert_eq!(names, ["26", "52", "106", "242", "484", "996", "2x996"]);
    for r in RuSize::ALL {
        assert_eq!(RuSize::from_tones(r.tones()), Some(r));
    }
    assert_eq!(RuSize::from_tones(0), None);
    assert_eq!(RuSize::from_tones(1000), None);
    let counts: Vec<[u32; 4]> = RuSize::ALL
        .iter()
        .map(|r| WIDTHS.map(|w| r.count(w)))
        .collect();
    assert_eq!(
        counts,
        [
            [9, 18, 37, 74],
            [4, 8, 16, 32],
            [2, 4, 8, 16],
            [1, 2, 4, 8],
            [0, 1, 2, 4],
            [0, 0, 1, 2],
            [0, 0, 0, 1]
        ]
    );
    assert_eq!(RuSize::Tones26.count(30), 0);
    assert_eq!(
        WIDTHS.map(RuSize::full_band),
        [
            RuSize::Tones242,
            RuSize::Tones484,
            RuSize::Tones996,
            RuSize::Tones2x996
        ]
    );
    for w in WIDTHS {
        // The full-band RU is the largest that fits, once.
        let full = RuSize::full_band(w);
        assert_eq!(full.count(w), 1);
        assert!(RuSize::ALL.iter().all(|r| *r <= full || r.count(w) == 0));
        assert_eq!(full.n_sd(), rates::n_sd(Standard::He, w));
    }
    assert!(RuSize::Tones26 < RuSize::Tones242 && RuSize::Tones996 < RuSize::Tones2x996);
}

#[test]
fn ru_rates_closed_forms() {
    // RU-106, HE-MCS 7, 1 SS, 0.8 µs GI: 102·6·5/6 = 510 bits per 13.6 µs = 37.5 Mb/s exactly.
    let t = TxVector::new(Standard::He, 7, 1, 20, 800).with_ru(RuSize::Tones106);
    assert_eq!(t.ru, Some(RuSize::Tones106));
    assert_eq!((t.n_cbps(), t.n_dbps()), (612, 510));
    assert_eq!(t.data_rate_bps(), 37_500_000);
    assert_eq!(t.data_rate_f64(), 37.5e6);
    // RU-26, HE-MCS 0: 24·1/2 = 12 bits per 13.6 µs = 882 352.9 b/s.
    let t = TxVector::new(Standard::He, 0, 1, 80, 800).with_ru(RuSize::Tones26);
    assert_eq!(t.n_dbps(), 12);
    assert_eq!(t.data_rate_bps(), 882_352);
    assert!((t.data_rate_f64() - 12e9 / 13_600.0).abs() < 1e-6);
    // RU-52, HE-MCS 9, 2 SS, 3.2 µs GI: 48·8·2·5/6 = 640 bits per 16 µs = 40 Mb/s.
    let t = TxVector::new(Standard::He, 9, 2, 40, 3200).with_ru(RuSize::Tones52);
    assert_eq!(t.data_rate_bps(), 40_000_000);
    // RU-242 == the full 20 MHz band, RU-484 == 40, RU-996 == 80 (with the non-integer
    // N_CBPS·R of MCS 9/11), RU-2x996 == 160, wherever the RU sits.
    for w in WIDTHS {
        let full = RuSize::full_band(w);
        for ch in WIDTHS.into_iter().filter(|&c| full.count(c) > 0) {
            for nss in 1..=8 {
                for mcs in 0..=11 {
                    for gi in [800, 1600, 3200] {
                        let su = TxVector::new(Standard::He, mcs, nss, w, gi);
                        let ru = TxVector::new(Standard::He, mcs, nss, ch, gi).with_ru(full);
                        assert_eq!(ru.validate(), Ok(()), "{ru:?}");
                        assert_eq!(
                            (ru.n_cbps(), ru.n_dbps()),
                            (su.n_cbps(), su.n_dbps()),
                            "{ru:?}"
                        );
                        assert_eq!(ru.data_rate_bps(), su.data_rate_bps(), "{ru:?}");
                        assert_eq!(ru.data_rate_f64(), su.data_rate_f64(), "{ru:?}");
                    }
                }
            }
        }
    }
    // Vectors that differ only in the RU are different keys.
    use std::hash::{Hash, Hasher};
    let h = |t: TxVector| {
        let mut s = std::hash::DefaultHasher::new();
        t.hash(&mut s);
        s.finish()
    };
    let a = TxVector::new(Standard::He, 5, 1, 80, 800);
    assert_ne!(a, a.with_ru(RuSize::Tones996));
    assert_ne!(h(a), h(a.with_ru(RuSize::Tones996)));
    assert_ne!(
        h(a.with_ru(RuSize::Tones26)),
        h(a.with_ru(RuSize::Tones996))
    );
    assert_eq!(
        h(a),
        h(TxVector {
            ru: None,
            ..a.with_ru(RuSize::Tones26)
        })
    );
}

#[test]
fn validate_checks_the_ru() {
    let bad = |tx: TxVector, field: &str| {
        let e = tx.validate().expect_err("should be rejected");
        assert_eq!(e.field, field, "{tx:?}: {e}");
        e.allowed
    };
    // Only HE has RUs.
    for s in [Standard::Ofdm, Standard::Ht, Standard::Vht] {
        bad(
            TxVector::new(s, 0, 1, 20, 800).with_ru(RuSize::Tones242),
            "ru",
        );
    }
    // The RU must fit the channel.
    let e = bad(
        TxVector::new(Standard::He, 0, 1, 20, 800).with_ru(RuSize::Tones484),
        "ru",
    );
    assert_eq!(e, "an RU that fits 20 MHz, in tones: 26, 52, 106, 242");
    bad(
        TxVector::new(Standard::He, 0, 1, 40, 800).with_ru(RuSize::Tones996),
        "ru",
    );
    bad(
        TxVector::new(Standard::He, 0, 1, 80, 800).with_ru(RuSize::Tones2x996),
        "ru",
    );
    // 1024-QAM only on 242 tones or more.
    let e = bad(
        TxVector::new(Standard::He, 10, 1, 80, 800).with_ru(RuSize::Tones106),
        "mcs",
    );
    assert!(e.contains("106-tone RU") && e.contains("242"), "{e}");
    bad(
        TxVector::new(Standard::He, 11, 2, 20, 1600).with_ru(RuSize::Tones26),
        "mcs",
    );
    // The other fields are still checked first.
    bad(
        TxVector::new(Standard::He, 12, 1, 20, 800).with_ru(RuSize::Tones26),
        "mcs",
    );
    bad(
        TxVector::new(Standard::He, 0, 1, 20, 400).with_ru(RuSize::Tones26),
        "guard_interval",
    );
    // Everything else is valid.
    for w in WIDTHS {
        for ru in RuSize::ALL {
            for nss in 1..=8 {
                for mcs in 0..=11 {
                    for gi in [800, 1600, 3200] {
                        let tx = TxVector::new(Standard::He, mcs, nss, w, gi).with_ru(ru);
                        let ok = ru.count(w) > 0 && (mcs <= 9 || ru >= RuSize::Tones242);
                        assert_eq!(tx.validate().is_ok(), ok, "{tx:?}");
                    }
                }
            }
        }
    }
}

#[test]
fn he_sig_b_lengths() {
    assert_eq!(
        (0..=5).map(preamble::sigb_n_dbps).collect::<Vec<_>>(),
        [26, 52, 78, 104, 156, 208]
    );
    assert_eq!(WIDTHS.map(preamble::sigb_common_bits), [18, 18, 27, 43]);
    assert_eq!(
        (0..=5).map(preamble::sigb_user_bits).collect::<Vec<_>>(),
        [0, 31, 52, 83, 104, 135]
    );
    // 80 MHz: two content channels, each 27 common bits + its users (ceil(n/2)).
    // 4 users: 2 per channel, 27 + 52 = 79 bits: MCS 0 ceil(79/26) = 4 symbols, MCS 5 1.
    assert_eq!(he_sig_b_ns(80, 4, 0), 16_000);
    assert_eq!(he_sig_b_ns(80, 4, 5), 4_000);
    // 9 users: 5 in the fuller channel, 27 + 2·52 + 31 = 162 bits: 7 symbols at MCS 0, 1 at 5.
    assert_eq!(he_sig_b_ns(80, 9, 0), 28_000);
    assert_eq!(he_sig_b_ns(80, 9, 5), 4_000);
    // 18 users: 9 per channel, 27 + 4·52 + 31 = 266 bits: 11 symbols at MCS 0, 2 at MCS 5.
    assert_eq!(he_sig_b_ns(80, 18, 0), 44_000);
    assert_eq!(he_sig_b_ns(80, 18, 5), 8_000);
    // 20 MHz, one content channel: 9 users, 18 + 4·52 + 31 = 257 bits, 10 symbols at MCS 0.
    assert_eq!(he_sig_b_ns(20, 9, 0), 40_000);
    // One user: 18 + 31 = 49 bits at 20 MHz (2 symbols at MCS 0); 43 + 31 = 74 at 160 MHz.
    assert_eq!(he_sig_b_ns(20, 1, 0), 8_000);
    assert_eq!(he_sig_b_ns(160, 1, 0), 12_000);
    assert_eq!(he_sig_b_ns(160, 1, 3), 4_000);
    // The AP's HE-SIG-B MCS: the lowest user MCS, at most 5.
    let u = |mcs| {
        (
            TxVector::new(Standard::He, mcs, 1, 80, 800).with_ru(RuSize::Tones242),
            1000u32,
        )
    };
    assert_eq!(sigb_mcs_for(&[u(7), u(3), u(9)]), 3);
    assert_eq!(sigb_mcs_for(&[u(11), u(8)]), 5);
    assert_eq!(sigb_mcs_for(&[]), 5);
    // MU preamble: 32 µs + HE-SIG-B + HE-STF 4 µs + HE-LTFs.
    assert_eq!(
        he_mu_preamble_ns(80, 800, 1, 4, 0),
        32_000 + 16_000 + 4_000 + 7_200
    );
    assert_eq!(
        he_mu_preamble_ns(80, 3200, 3, 4, 5),
        32_000 + 4_000 + 4_000 + 4 * 16_000
    );
    assert_eq!(
        he_mu_preamble_ns(20, 1600, 2, 1, 0),
        32_000 + 8_000 + 4_000 + 2 * 8_000
    );
}

#[test]
fn mu_ppdu_with_one_full_band_user_is_the_su_ppdu_plus_sig_b() {
    for w in WIDTHS {
        for gi in [800, 1600, 3200] {
            for nss in [1, 2, 3, 8] {
                for mcs in 0..=11 {
                    for bytes in [0u32, 1, 100, 1538, 65_000] {
                        for band in Band::ALL {
                            let su = TxVector::new(Standard::He, mcs, nss, w, gi);
                            let sig_b = he_sig_b_ns(w, 1, mcs.min(5));
                            let want = ppdu_duration(&su, bytes, band).as_nanos() + sig_b;
                            let full = su.with_ru(RuSize::full_band(w));
                            assert_eq!(
                                he_mu_ppdu_duration(&[(su, bytes)], band).as_nanos(),
                                want,
                                "{su:?} {bytes}"
                            );
                            assert_eq!(
                                he_mu_ppdu_duration(&[(full, bytes)], band).as_nanos(),
                                want,
                                "{full:?}"
                            );
                            // A vector on an RU alone is timed as that one-user MU PPDU.
                            assert_eq!(
                                ppdu_duration(&full, bytes, band).as_nanos(),
                                want,
                                "{full:?}"
                            );
                            assert_eq!(
                                psdu_prefix_time(&full, bytes, band).as_nanos(),
                                psdu_prefix_time(&su, bytes, band).as_nanos() + sig_b
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn mu_ppdu_pads_every_user_to_the_longest() {
    // 80 MHz, four users on 242-tone RUs, 1 SS, 0.8 µs GI. N_DBPS 1170 (MCS 7), 1560 (9),
    // 702 (4), 1950 (11); N_SYM 11, 16, 10, 25. HE-SIG-B at MCS 4 (N_DBPS 156): 27 + 52 bits,
    // one symbol. Preamble 32 + 4 + 4 + 7.2 µs, data 25 · 13.6 µs.
    let u = |mcs, bytes| {
        (
            TxVector::new(Standard::He, mcs, 1, 80, 800).with_ru(RuSize::Tones242),
            bytes,
        )
    };
    let users = [u(7, 1500), u(9, 3000), u(4, 800), u(11, 6000)];
    let nsym: Vec<u64> = users.iter().map(|(t, b)| timing::n_sym(t, *b)).collect();
    assert_eq!(nsym, [11, 16, 10, 25]);
    assert_eq!(sigb_mcs_for(&users), 4);
    let pre = he_mu_preamble_ns(80, 800, 1, 4, 4);
    assert_eq!(pre, 47_200);
    assert_eq!(
        he_mu_ppdu_duration(&users, Band::Ghz5),
        Duration(47_200 + 25 * 13_600)
    );
    assert_eq!(
        he_mu_ppdu_duration(&users, Band::Ghz2_4),
        Duration(47_200 + 25 * 13_600 + 6_000)
    );
    assert_eq!(he_mu_ppdu_duration(&[], Band::Ghz5), Duration::ZERO);
    // The most streams set the HE-LTF count for everyone.
    let mut two = users;
    two[2].0.nss = 2;
    assert_eq!(
        he_mu_ppdu_duration(&two, Band::Ghz5),
        Duration(47_200 + 7_200 + 25 * 13_600)
    );
    // Each user's subframes arrive after the shared preamble at its own RU's rate.
    for (tx, bytes) in users {
        let clock = PrefixClock::with_preamble(&tx, Band::Ghz5, pre);
        let ndbps = tx.n_dbps() as u64;
        for k in [0u32, 1, 700, bytes] {
            assert_eq!(
                clock.at(k).as_nanos(),
                pre + 13_600 * (16 + 8 * k as u64).div_ceil(ndbps),
                "{tx:?} {k}"
            );
        }
        assert!(clock.at(bytes) <= he_mu_ppdu_duration(&users, Band::Ghz5));
    }
    // Small RUs: 9 users on 26-tone RUs at 20 MHz, MCS 0..=8, 200 octets each.
    let small: Vec<(TxVector, u32)> = (0..9u8)
        .map(|m| {
            (
                TxVector::new(Standard::He, m, 1, 20, 1600).with_ru(RuSize::Tones26),
                200,
            )
        })
        .collect();
    // Slowest user: MCS 0, 12 bits per symbol: ceil(1616 / 12) = 135 symbols of 14.4 µs;
    // HE-SIG-B at MCS 0: 40 µs (see he_sig_b_lengths); one 2× HE-LTF of 8 µs.
    assert_eq!(
        he_mu_ppdu_duration(&small, Band::Ghz6),
        Duration(32_000 + 40_000 + 4_000 + 8_000 + 135 * 14_400)
    );
    // PrefixClock::new of a vector on an RU is the one-user MU clock.
    let t = small[3].0;
    let one = PrefixClock::with_preamble(&t, Band::Ghz5, he_mu_preamble_ns(20, 1600, 1, 1, 3));
    for k in [0u32, 50, 200] {
        assert_eq!(PrefixClock::new(&t, Band::Ghz5).at(k), one.at(k));
    }
}

#[test]
fn tb_ppdu_lengths_and_ul_length() {
    assert_eq!([800, 1600, 3200].map(tb_guard_interval), [1600, 1600, 3200]);
    // 32 µs + HE-STF 8 µs + HE-LTFs (2× at 1.6 µs GI: 8 µs; 4× at 3.2 µs: 16 µs).
    assert_eq!(he_tb_preamble_ns(800, 1), 48_000);
    assert_eq!(he_tb_preamble_ns(1600, 2), 56_000);
    assert_eq!(he_tb_preamble_ns(3200, 1), 56_000);
    assert_eq!(he_tb_preamble_ns(3200, 3), 40_000 + 4 * 16_000);
    // Two users on 106-tone RUs at 20 MHz, cell GI 0.8 µs -> TB GI 1.6 µs (14.4 µs symbols).
    // N_DBPS 408 (MCS 5) and 204 (MCS 3); N_SYM ceil(4016/408) = 10, ceil(2416/204) = 12.
    // 48 + 12·14.4 = 220.8 µs, on the L-SIG grid 20 + 4·ceil(200.8/4) = 224 µs; UL Length
    // 51·3 − 3 − 2 = 148.
    let u = |mcs, bytes| {
        (
            TxVector::new(Standard::He, mcs, 1, 20, 800).with_ru(RuSize::Tones106),
            bytes,
        )
    };
    let users = [u(5, 500), u(3, 300)];
    let d = he_tb_ppdu_duration(&users, Band::Ghz5);
    assert_eq!(d, Duration::from_micros(224));
    assert_eq!(ul_length_of(d, Band::Ghz5), 148);
    assert_eq!(tb_txtime_of(148, Band::Ghz5), d);
    // 2.4 GHz: 226.8 µs with the 6 µs signal extension -> 20 + 4·51 + 6 = 230 µs, same LENGTH.
    let d24 = he_tb_ppdu_duration(&users, Band::Ghz2_4);
    assert_eq!(d24, Duration::from_micros(230));
    assert_eq!(ul_length_of(d24, Band::Ghz2_4), 148);
    assert_eq!(tb_txtime_of(148, Band::Ghz2_4), d24);
    assert_eq!(he_tb_ppdu_duration(&[], Band::Ghz5), Duration::ZERO);
    // A user's subframes in the TB PPDU: its vector at the TB GI after the TB preamble.
    let tb = TxVector {
        guard_interval: tb_guard_interval(800),
        ..users[1].0
    };
    let clock = PrefixClock::with_preamble(&tb, Band::Ghz5, he_tb_preamble_ns(800, 1));
    assert_eq!(clock.at(300), Duration(48_000 + 12 * 14_400));
    assert!(clock.at(300) <= d);
    // aPPDUMaxTime is the longest UL Length that fits 12 bits.
    assert_eq!(ul_length_of(Duration::from_micros(5484), Band::Ghz5), 4093);
    assert_eq!(tb_txtime_of(4093, Band::Ghz5), Duration::from_micros(5484));
    // Round trips: LENGTH -> TXTIME -> LENGTH is the identity on LENGTH ≡ 1 (mod 3) (the values
    // m = 2 produces) and otherwise goes up to the next such value; TXTIME -> LENGTH -> TXTIME
    // is the rounding up to the L-SIG grid.
    for band in Band::ALL {
        for l in 0..=4095u16 {
            let next = l + (4 - l % 3) % 3;
            assert_eq!(ul_length_of(tb_txtime_of(l, band), band), next, "{l}");
        }
        let se = if band == Band::Ghz2_4 { 6_000 } else { 0 };
        // (From 24 µs + SE on: shorter TXTIMEs, shorter than any HE PPDU, have no LENGTH.)
        for t in (24_001 + se..5_600_000).step_by(997) {
            let r = lsig_round(Duration(t), band);
            assert!(r.as_nanos() >= t && r.as_nanos() < t + 4_000, "{t}");
            assert!((r.as_nanos() - 20_000 - se).is_multiple_of(4_000));
            assert_eq!(
                tb_txtime_of(ul_length_of(Duration(t), band), band),
                r,
                "{t}"
            );
        }
    }
    // The TB PPDU is never shorter than its preamble and data, and lies on the L-SIG grid.
    for gi in [800, 1600, 3200] {
        for ru in [
            RuSize::Tones26,
            RuSize::Tones52,
            RuSize::Tones106,
            RuSize::Tones242,
        ] {
            for bytes in [0u32, 1, 1538, 20_000] {
                let tx = TxVector::new(Standard::He, 4, 2, 40, gi).with_ru(ru);
                let d = he_tb_ppdu_duration(&[(tx, bytes)], Band::Ghz5).as_nanos();
                let g = tb_guard_interval(gi) as u64;
                let raw = he_tb_preamble_ns(gi, 2) + timing::n_sym(&tx, bytes) * (12_800 + g);
                assert!(
                    d >= raw && d < raw + 4_000 && (d - 20_000).is_multiple_of(4_000),
                    "{tx:?} {bytes}"
                );
            }
        }
    }
}
