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
