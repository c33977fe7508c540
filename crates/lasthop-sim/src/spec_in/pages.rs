//! The eleven web pages of Manzoor et al. (WCNC 2019), Table II, as QUIC page loads: the
//! table gives, per page, the number of objects of each type (HTML, CSS, JS, image, other) and
//! the page's total size, not object sizes. The total is split over the objects by fixed
//! per-type weights (HTML 3, CSS 2, JS 4, image 2, other 1: scripts are the largest text
//! resources and images the most numerous on typical landing pages; any split keeps the object
//! count and the total, which drive the load time), in whole bytes, the rounding remainder going
//! to the first HTML object. The simulator (`world/hosts/quic.rs`) and the live HTTP/3 tool load the
//! same objects.

/// name: (html, css, js, image, other, total kB).
pub const TABLE_II: [(&str, [u32; 5], u64); 11] = [
    ("google", [2, 1, 3, 5, 1], 56),
    ("live", [2, 2, 2, 2, 0], 262),
    ("twitter", [6, 1, 4, 2, 3], 421),
    ("wikipedia", [1, 1, 2, 20, 1], 441),
    ("reddit", [4, 2, 5, 26, 2], 470),
    ("yahoo", [16, 13, 5, 48, 4], 839),
    ("ebay", [4, 1, 6, 3, 14], 985),
    ("instagram", [3, 1, 7, 25, 1], 1409),
    ("youtube", [8, 3, 5, 113, 20], 2911),
    ("facebook", [1, 1, 8, 123, 1], 3560),
    ("amazon", [5, 2, 14, 41, 2], 3723),
];
const WEIGHTS: [u64; 5] = [3, 2, 4, 2, 1];

/// The objects of page `name`: (type index, bytes), HTML first; None for an unknown page.
pub fn objects(name: &str) -> Option<Vec<(usize, u64)>> {
    let (_, counts, total_kb) = TABLE_II.iter().find(|p| p.0 == name)?;
    let mut kinds: Vec<usize> = counts.iter().enumerate().flat_map(|(k, &n)| std::iter::repeat_n(k, n as usize)).collect();
    kinds.sort_by_key(|&k| k != 0);
    let total = total_kb * 1000;
    let wsum: u64 = kinds.iter().map(|&k| WEIGHTS[k]).sum();
    let mut sizes: Vec<u64> = kinds.iter().map(|&k| total * WEIGHTS[k] / wsum).collect();
    sizes[0] += total - sizes.iter().sum::<u64>();
    Some(kinds.into_iter().zip(sizes).collect())
}

