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
