//! HE resource units (RUs): the OFDMA sub-channels of an HE MU PPDU or HE TB PPDU.
//!
//! Follows IEEE 802.11ax-2021:
//! * §27.3.2.2 (resource unit, guard and DC subcarriers): the RU sizes 26, 52, 106, 242, 484,
//!   996 and 2×996 tones and how many of each a 20/40/80/160 MHz HE PPDU holds (the RU
//!   location tables of that subclause and its table of the maximum number of RUs per
//!   bandwidth): 9, 18, 37, 74 of 26 tones (37 = 4·9 plus the center 26-tone RU of the 80 MHz);
//!   4, 8, 16, 32 of 52; 2, 4, 8, 16 of 106; 1, 2, 4, 8 of 242; 0, 1, 2, 4 of 484; 0, 0, 1, 2 of
//!   996; 0, 0, 0, 1 of 2×996.
//! * Table 27-14 (tone allocation related constants for RUs in an OFDMA HE PPDU): N_SD, the
//!   data subcarriers of an RU — 24, 48, 102, 234, 468, 980, 1960 (the rest of its tones are
//!   pilots: 2, 4, 4, 8, 16, 16, 32).
//!
//! The RUs of 242 tones and more are the full-band RUs of a 20/40/80/160 MHz channel; an HE SU
//! PPDU always uses the full band (a [`super::TxVector`] with `ru: None`).
//!
//! Where an RU sits ([`RuSize::span`], [`place`]): the RU location figures of §27.3.2.2 number
//! the RUs of each size from the lowest frequency up; in 26-tone units a 242-tone RU holds
//! nine (106 = 26-tone units 0–3 and 5–8 around its center 26-tone RU, 52 = 0–1, 2–3, 5–6, 7–8),
//! and an 80 MHz channel holds four 242-tone RUs and its own center 26-tone RU (unit 18). The
//! model's channel is flat, so the position changes nothing it computes; captures show it.

/// The size of an HE resource unit, in tones (subcarriers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RuSize {
    Tones26,
    Tones52,
    Tones106,
    Tones242,
    Tones484,
    Tones996,
    Tones2x996,
}

impl RuSize {
    /// Every size, smallest first.
    pub const ALL: [RuSize; 7] = [
        RuSize::Tones26,
        RuSize::Tones52,
        RuSize::Tones106,
        RuSize::Tones242,
        RuSize::Tones484,
        RuSize::Tones996,
        RuSize::Tones2x996,
    ];

    /// Tones (data and pilot subcarriers) of the RU: 26 … 1992.
    pub const fn tones(self) -> u16 {
        match self {
            RuSize::Tones26 => 26,
            RuSize::Tones52 => 52,
            RuSize::Tones106 => 106,
            RuSize::Tones242 => 242,
            RuSize::Tones484 => 484,
            RuSize::Tones996 => 996,
            RuSize::Tones2x996 => 1992,
        }
    }

    /// Inverse of [`RuSize::tones`] (1992 is the 2×996-tone RU).
    pub fn from_tones(tones: u16) -> Option<RuSize> {
        RuSize::ALL.into_iter().find(|r| r.tones() == tones)
    }

    /// Data subcarriers per stream (N_SD, 802.11ax-2021 Table 27-14).
    pub const fn n_sd(self) -> u32 {
        match self {
            RuSize::Tones26 => 24,
            RuSize::Tones52 => 48,
            RuSize::Tones106 => 102,
            RuSize::Tones242 => 234,
            RuSize::Tones484 => 468,
            RuSize::Tones996 => 980,
            RuSize::Tones2x996 => 1960,
        }
    }

    /// How many RUs of this size an HE PPDU of `width_mhz` (20, 40, 80, 160) holds; 0 when the
    /// RU does not fit or the width is not an HE width (§27.3.2.2).
    pub const fn count(self, width_mhz: u16) -> u32 {
        let i = match width_mhz {
            20 => 0,
            40 => 1,
            80 => 2,
            160 => 3,
            _ => return 0,
        };
        let per_width: [u32; 4] = match self {
            RuSize::Tones26 => [9, 18, 37, 74],
            RuSize::Tones52 => [4, 8, 16, 32],
            RuSize::Tones106 => [2, 4, 8, 16],
            RuSize::Tones242 => [1, 2, 4, 8],
            RuSize::Tones484 => [0, 1, 2, 4],
            RuSize::Tones996 => [0, 0, 1, 2],
            RuSize::Tones2x996 => [0, 0, 0, 1],
        };
        per_width[i]
    }

    /// "26", "52", "106", "242", "484", "996" or "2x996".
    pub const fn name(self) -> &'static str {
        match self {
            RuSize::Tones26 => "26",
            RuSize::Tones52 => "52",
            RuSize::Tones106 => "106",
            RuSize::Tones242 => "242",
            RuSize::Tones484 => "484",
            RuSize::Tones996 => "996",
            RuSize::Tones2x996 => "2x996",
        }
    }

    /// The 26-tone units `[start, end)` RU number `index` (from 0, lowest frequency first) of
    /// this size covers in a `width` MHz channel (§27.3.2.2's RU locations; see the module
    /// documentation). `index` must be below [`RuSize::count`].
    pub const fn span(self, index: u32, width: u16) -> (u32, u32) {
        // The first 26-tone unit of 242-tone RU `g`: nine units each, and at 80 and 160 MHz
        // the 80 MHz segment's center 26-tone RU between its second and third.
        const fn base242(g: u32, width: u16) -> u32 {
            if width >= 80 {
                (g / 4) * 37 + (g % 4) * 9 + if g % 4 >= 2 { 1 } else { 0 }
            } else {
                g * 9
            }
        }
        match self {
            RuSize::Tones26 => (index, index + 1),
            RuSize::Tones52 => {
                let start = base242(index / 4, width) + [0, 2, 5, 7][(index % 4) as usize];
                (start, start + 2)
            }
            RuSize::Tones106 => {
                let start = base242(index / 2, width) + [0, 5][(index % 2) as usize];
                (start, start + 4)
            }
            RuSize::Tones242 => (base242(index, width), base242(index, width) + 9),
            RuSize::Tones484 => (base242(2 * index, width), base242(2 * index, width) + 18),
            RuSize::Tones996 => (37 * index, 37 * index + 37),
            RuSize::Tones2x996 => (0, 74),
        }
    }

    /// The RU that spans a whole channel of `width` MHz: 242 (20), 484 (40), 996 (80),
    /// 2×996 (160). A width that is not an HE width gets the largest RU it could hold
    /// (below 40 MHz: 242 tones; 160 MHz and above: 2×996).
    pub const fn full_band(width: u16) -> RuSize {
        match width {
            0..=39 => RuSize::Tones242,
            40..=79 => RuSize::Tones484,
            80..=159 => RuSize::Tones996,
            _ => RuSize::Tones2x996,
        }
    }
}

/// Where the users' RUs of one MU PPDU sit: `out[i]` is the index of `sizes[i]` among the RUs
/// of its size (from 0, lowest frequency first), the larger RUs placed first, each at the
/// lowest index that overlaps no RU already placed (`u32::MAX` where none is free). RU sets
/// that tile the channel (equal RUs, or a halving of the RU tree) always fit.
pub fn place(width: u16, sizes: &[RuSize], out: &mut Vec<u32>) {
    out.clear();
    out.resize(sizes.len(), u32::MAX);
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by(|&a, &b| sizes[b].cmp(&sizes[a]));
    let mut taken: Vec<(u32, u32)> = Vec::with_capacity(sizes.len());
    for i in order {
        let ru = sizes[i];
        let free = (0..ru.count(width)).find(|&k| {
            let (s, e) = ru.span(k, width);
            taken.iter().all(|&(ts, te)| e <= ts || te <= s)
        });
        if let Some(k) = free {
            taken.push(ru.span(k, width));
            out[i] = k;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_tile_the_channel_as_the_ru_location_figures() {
        for width in [20u16, 40, 80, 160] {
            let units = RuSize::Tones26.count(width);
            for ru in RuSize::ALL {
                let n = ru.count(width);
                let mut covered = vec![0u32; units as usize];
                for k in 0..n {
                    let (s, e) = ru.span(k, width);
                    assert_eq!(e - s, match ru {
                        RuSize::Tones26 => 1,
                        RuSize::Tones52 => 2,
                        RuSize::Tones106 => 4,
                        RuSize::Tones242 => 9,
                        RuSize::Tones484 => 18,
                        RuSize::Tones996 => 37,
                        RuSize::Tones2x996 => 74,
                    });
                    assert!(e <= units, "{ru:?} {k} at {width} MHz");
                    for u in s..e {
                        covered[u as usize] += 1;
                    }
                }
                assert!(covered.iter().all(|&c| c <= 1), "{ru:?} overlaps itself at {width} MHz");
            }
            // The 26-tone RUs cover every unit; the 52- and 106-tone RUs leave the center
            // 26-tone RU of every 20 MHz (unit 4 of each 242-tone RU) and of every 80 MHz.
            let free: Vec<u32> = (0..units)
                .filter(|&u| (0..RuSize::Tones106.count(width)).all(|k| {
                    let (s, e) = RuSize::Tones106.span(k, width);
                    u < s || u >= e
                }))
                .collect();
            let expect: Vec<u32> = match width {
                20 => vec![4],
                40 => vec![4, 13],
                80 => vec![4, 13, 18, 23, 32],
                _ => vec![4, 13, 18, 23, 32, 41, 50, 55, 60, 69],
            };
            assert_eq!(free, expect, "{width} MHz");
        }
    }

    #[test]
    fn users_rus_are_placed_apart() {
        let mut out = Vec::new();
        // A halving of an 80 MHz channel: 484 + 242 + 106 + 52 + 52. The 484 takes units 0–17,
        // the 242 units 19–27 (past the center 26-tone RU), the 106 units 28–31 and the two
        // 52s the upper half of the last 242 (33–34, 35–36).
        let sizes = [RuSize::Tones52, RuSize::Tones484, RuSize::Tones106, RuSize::Tones242, RuSize::Tones52];
        place(80, &sizes, &mut out);
        assert_eq!(out, vec![14, 0, 6, 2, 15]);
        let spans: Vec<(u32, u32)> = sizes.iter().zip(&out).map(|(r, &k)| r.span(k, 80)).collect();
        for (i, a) in spans.iter().enumerate() {
            for b in &spans[i + 1..] {
                assert!(a.1 <= b.0 || b.1 <= a.0, "{spans:?}");
            }
        }
        // Equal RUs take every index of their size; one too many finds no room.
        place(80, &[RuSize::Tones26; 37], &mut out);
        assert_eq!(out, (0..37).collect::<Vec<u32>>());
        place(20, &[RuSize::Tones106; 3], &mut out);
        assert_eq!(out, vec![0, 1, u32::MAX]);
    }
}
