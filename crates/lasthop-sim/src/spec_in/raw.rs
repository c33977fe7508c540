//! The spec reader's value type, and what its messages are made of: values shown in TOML-like
//! syntax, the quantity parser (durations, rates), the closest-key suggestion. These began as
//! the Python package's spec checks (Python's spec layer before it moved here); they keep
//! that text byte for byte, so messages did not change, and so they follow Python's rules where
//! Python had them (`repr` of floats, `str.strip`, CPython 3.11's `difflib`).
//!
//! Python counts and slices strings in code points, so lengths here are in `char`s. Where Python
//! consults Unicode tables (`\s`, `\d`, `str.strip`, `str.lower`) the tables are those of the
//! CPython the expected values came from (3.11, Unicode 14.0); see [`py_space`], `py_digit`
//! and [`unknown_key`] for what a different Unicode version could change.

use std::collections::BTreeMap;

/// A TOML/Python value as handed over by the spec loader. Tables keep their key order.
#[derive(Clone, Debug, PartialEq)]
pub enum Raw {
    Bool(bool),
    /// A Python int that fits i128.
    Int(i128),
    /// A Python int outside i128: its decimal text (`str(v)`, with '-' if negative) and
    /// `int.bit_length()`.
    BigInt { text: String, bits: u32 },
    Float(f64),
    Str(String),
    List(Vec<Raw>),
    Table(Vec<(String, Raw)>),
    /// Any other Python object (a TOML datetime, None ...): its `repr()`.
    Other(String),
}

/// `SHOW_MAX`: the longest echoed value, in characters.
pub const SHOW_MAX: usize = 80;

// --- show_value ----------------------------------------------------------------------------

/// `_clip`: text longer than SHOW_MAX characters is cut to SHOW_MAX - 1 and told its
/// length.
fn clip(text: String) -> String {
    let n = text.chars().count();
    if n <= SHOW_MAX {
        return text;
    }
    let head: String = text.chars().take(SHOW_MAX - 1).collect();
    format!("{head}… ({n} characters)")
}

/// `json.dumps(s, ensure_ascii=False)`: `"` `\` and the C0 controls escaped (json's ESCAPE
/// regex `[\x00-\x1f\\"\b\f\n\r\t]`, the short forms where json has one), the rest as is.
fn json_str(s: impl Iterator<Item = char>) -> String {
    let mut out = String::from('"');
    for c in s {
        match crate::canonical::short_escape(c) {
            Some(e) => out.push_str(e),
            None if c < ' ' => out.push_str(&format!("\\u{:04x}", c as u32)),
            None => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `show_value`: a value for an error message, in TOML-like syntax, clipped to
/// SHOW_MAX characters. (Python's `MISSING` case is the caller's: a `Raw` is never missing.)
pub fn show_value(v: &Raw) -> String {
    match v {
        Raw::Bool(b) => (if *b { "true" } else { "false" }).to_owned(),
        // A string of at most 2 * SHOW_MAX characters is quoted then clipped; a longer one
        // is quoted from its first SHOW_MAX - 2 characters (without _clip).
        Raw::Str(s) => match s.chars().count() {
            n if n <= SHOW_MAX * 2 => clip(json_str(s.chars())),
            n => format!("{}… ({n} characters)", json_str(s.chars().take(SHOW_MAX - 2))),
        },
        Raw::BigInt { bits, .. } if *bits > 200 => format!("an integer of {bits} bits"),
        Raw::BigInt { text, .. } => clip(text.clone()),
        Raw::Int(i) => clip(i.to_string()),
        Raw::Float(x) => clip(float_repr(*x)),
        Raw::Table(_) => "{...}".to_owned(),
        Raw::List(items) => {
            let shown: Vec<String> = items.iter().take(8).map(show_value).collect();
            let more = if items.len() > 8 { ", ..." } else { "" };
            clip(format!("[{}{more}]", shown.join(", ")))
        }
        Raw::Other(repr) => clip(repr.clone()),
    }
}

// --- float text --------------------------------------------------------------------------

/// Python's `repr(float)` (`float_repr_style` 'short'): the canonical JSON writer's
/// (`canonical::write_f64`, shortest round-trip digits, zmij), with "inf", "-inf" and "nan"
/// (also for a NaN with the sign bit set) where JSON has none.
pub fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_owned();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.to_owned();
    }
    let mut out = String::new();
    crate::canonical::write_f64(x, &mut out);
    out
}

/// Python's `f"{x:g}"`: 6 significant digits (correctly rounded, ties to even as dtoa mode 2
/// and Rust's `{:.5e}` both do), positional when the rounded exponent X is in -4 <= X < 6,
/// else `d.ddddde±XX`; trailing zeros and a bare point removed; "-0", "inf", "-inf", "nan".
pub fn fmt_g(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_owned();
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    if x.is_infinite() {
        return format!("{sign}inf");
    }
    if x == 0.0 {
        return format!("{sign}0");
    }
    let s = format!("{:.5e}", x.abs());
    let (mant, exp) = s.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("an exponent");
    let all = mant.replace('.', "");
    let digits = all.trim_end_matches('0');
    if (-4..6).contains(&exp) {
        let point = exp + 1; // digits before the point
        if point <= 0 {
            format!("{sign}0.{}{digits}", "0".repeat(-point as usize))
        } else if (point as usize) < digits.len() {
            let (h, t) = digits.split_at(point as usize);
            format!("{sign}{h}.{t}")
        } else {
            format!("{sign}{digits}{}", "0".repeat(point as usize - digits.len()))
        }
    } else {
        let (h, t) = digits.split_at(1);
        let dot = if t.is_empty() { "" } else { "." };
        format!("{sign}{h}{dot}{t}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
    }
}

// --- quantities (units.py) ----------------------------------------------------------------------

/// Python's whitespace (`str.isspace`, `str.strip()`, `\s` in a str pattern): Unicode
/// White_Space, which is what `char::is_whitespace` tests, plus U+001C..U+001F (CPython's
/// `_PyUnicode_IsWhitespace` also takes the bidi classes B and S). Exact for every char.
pub fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// The code points of digit 0 of each run of ten Unicode decimal digits (category Nd, what
/// `\d` in a str pattern, `str.isdecimal` and `int()` take), Unicode 14.0 (CPython 3.11).
/// A later Unicode adds runs (e.g. U+11F50 in 15.0): such digits are rejected here as Python
/// 3.11 rejects them.
const DIGIT_ZEROS: [u32; 66] = [
    0x30, 0x660, 0x6f0, 0x7c0, 0x966, 0x9e6, 0xa66, 0xae6, 0xb66, 0xbe6, 0xc66, 0xce6, 0xd66,
    0xde6, 0xe50, 0xed0, 0xf20, 0x1040, 0x1090, 0x17e0, 0x1810, 0x1946, 0x19d0, 0x1a80, 0x1a90,
    0x1b50, 0x1bb0, 0x1c40, 0x1c50, 0xa620, 0xa8d0, 0xa900, 0xa9d0, 0xa9f0, 0xaa50, 0xabf0,
    0xff10, 0x104a0, 0x10d30, 0x11066, 0x110f0, 0x11136, 0x111d0, 0x112f0, 0x11450, 0x114d0,
    0x11650, 0x116c0, 0x11730, 0x118e0, 0x11950, 0x11c50, 0x11d50, 0x11da0, 0x16a60, 0x16ac0,
    0x16b50, 0x1d7ce, 0x1d7d8, 0x1d7e2, 0x1d7ec, 0x1d7f6, 0x1e140, 0x1e2f0, 0x1e950, 0x1fbf0,
];

/// The value of a decimal digit as `\d` / `int()` see it (any script), else None.
fn py_digit(c: char) -> Option<u8> {
    let c = c as u32;
    let i = DIGIT_ZEROS.partition_point(|&z| z <= c);
    (i > 0 && c - DIGIT_ZEROS[i - 1] < 10).then(|| (c - DIGIT_ZEROS[i - 1]) as u8)
}

/// Byte length of the run of `\d` characters that starts `s`.
fn digits_len(s: &str) -> usize {
    s.chars().take_while(|&c| py_digit(c).is_some()).map(char::len_utf8).sum()
}

/// units.py `_QUANTITY` (`^\s*(?P<num>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>[A-Za-z]+)\s*$`) on a
/// stripped string: (num, unit). Digits, '.', whitespace and letters are disjoint, so the
/// greedy reading is the only one the regex can find.
fn match_quantity(s: &str) -> Option<(&str, &str)> {
    let mut i = digits_len(s);
    if i > 0 {
        if s[i..].starts_with('.') {
            i += 1 + digits_len(&s[i + 1..]);
        }
    } else if s.starts_with('.') && digits_len(&s[1..]) > 0 {
        i = 1 + digits_len(&s[1..]);
    } else {
        return None;
    }
    let unit = s[i..].trim_start_matches(py_space);
    let all_letters = !unit.is_empty() && unit.bytes().all(|b| b.is_ascii_alphabetic());
    all_letters.then_some((&s[..i], unit))
}

/// units.py: `re.fullmatch(r"\+?\d+(\.\d*)?([eE][+-]?\d+)?", stripped)`, a number without a unit.
fn is_bare_number(s: &str) -> bool {
    let s = s.strip_prefix('+').unwrap_or(s);
    let d = digits_len(s);
    if d == 0 {
        return false;
    }
    let mut rest = &s[d..];
    if let Some(r) = rest.strip_prefix('.') {
        rest = &r[digits_len(r)..];
    }
    if let Some(r) = rest.strip_prefix(['e', 'E']) {
        let r = r.strip_prefix(['+', '-']).unwrap_or(r);
        let d = digits_len(r);
        if d > 0 {
            rest = &r[d..];
        }
    }
    rest.is_empty()
}

/// units.py's unit tables: name and power of ten of its scale, smallest first (dict order).
struct Units {
    units: [(&'static str, u32); 4],
    kind: &'static str,
    example: &'static str,
}

const DURATION_UNITS: Units = Units {
    units: [("ns", 0), ("us", 3), ("ms", 6), ("s", 9)],
    kind: "duration",
    example: r#""10s" or "102.4ms""#,
};
const RATE_UNITS: Units = Units {
    units: [("bps", 0), ("kbps", 3), ("Mbps", 6), ("Gbps", 9)],
    kind: "rate",
    example: r#""100Mbps" or "1.5Gbps""#,
};

/// units.py `NUM_DIGITS_MAX`.
const NUM_DIGITS_MAX: usize = 40;

/// units.py `_parse`, the checks in its order. Python computes `Fraction(num) * scale`; every
/// scale is a power of ten, so "whole" and "too large" are decided on the digit string (a
/// number may have 40 digits, beyond u128).
fn parse(v: &Raw, u: &Units) -> Result<u64, String> {
    let names: Vec<&str> = u.units.iter().map(|(n, _)| *n).collect();
    let allowed = format!("a {} string with unit {}, e.g. {}", u.kind, names.join("|"), u.example);
    let base = u.units[0].0; // min(units, key=units.__getitem__)
    let text = match v {
        Raw::Bool(_) | Raw::Int(_) | Raw::BigInt { .. } | Raw::Float(_) => {
            return Err(format!("units are mandatory: {allowed}"))
        }
        Raw::Str(s) => s,
        _ => return Err(allowed),
    };
    let s = text.trim_matches(py_space);
    if s.starts_with('-') {
        return Err(format!("must not be negative; {allowed}"));
    }
    let Some((num, unit)) = match_quantity(s) else {
        return Err(if is_bare_number(s) { format!("units are mandatory: {allowed}") } else { allowed });
    };
    // f"{unit!r}": the unit is ASCII letters, so its repr is just single-quoted.
    let Some(&(_, pow)) = u.units.iter().find(|(n, _)| *n == unit) else {
        return Err(format!("unknown unit '{unit}'; {allowed}"));
    };
    let len = num.chars().count();
    if len > NUM_DIGITS_MAX {
        return Err(format!("a number of {len} characters; at most {NUM_DIGITS_MAX}: {allowed}"));
    }
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let int: Vec<u8> = int.chars().filter_map(py_digit).collect();
    let frac: Vec<u8> = frac.chars().filter_map(py_digit).collect();
    // Times 10^pow: the first `pow` fraction digits join the integer part; any nonzero digit
    // after them leaves a denominator != 1.
    let shift = frac.len().min(pow as usize);
    if frac[shift..].iter().any(|&d| d != 0) {
        return Err(format!("not a whole number of {base}; {allowed}"));
    }
    let zeros = std::iter::repeat_n(0, pow as usize - shift);
    let digits: Vec<u8> = int.iter().chain(&frac[..shift]).copied().chain(zeros).skip_while(|&d| d == 0).collect();
    // u64::MAX has 20 digits: fewer fit u128 exactly.
    let value = (digits.len() <= 20).then(|| digits.iter().fold(0u128, |acc, &d| acc * 10 + d as u128));
    match value.and_then(|v| u64::try_from(v).ok()) {
        Some(v) => Ok(v),
        None => Err(format!(
            "too large: at most {} {base} (what the simulator's 64-bit counters hold)",
            u64::MAX
        )),
    }
}

/// units.py `parse_duration`: `"102.4ms"` -> 102_400_000 (ns); Err is the UnitError message.
pub fn parse_duration(v: &Raw) -> Result<u64, String> {
    parse(v, &DURATION_UNITS)
}

/// units.py `parse_rate`: `"1.5Gbps"` -> 1_500_000_000 (bit/s); Err is the UnitError message.
pub fn parse_rate(v: &Raw) -> Result<u64, String> {
    parse(v, &RATE_UNITS)
}

/// units.py `_format`: the largest unit the value reaches in which it is whole or has at most
/// three decimals (trailing zeros dropped); 0 in the base unit.
fn format(value: u64, u: &Units) -> String {
    for &(unit, pow) in u.units.iter().rev() {
        let scale = 10u64.pow(pow);
        if value >= scale {
            let (whole, rest) = (value / scale, value % scale);
            if rest == 0 {
                return format!("{whole}{unit}");
            }
            // (q * 1000).denominator == 1; reached only for pow >= 3 (pow 0 is always whole).
            let milli = scale / 1000;
            let (milli, sub) = (rest / milli, rest % milli);
            if sub == 0 {
                let text = format!("{whole}.{milli:03}");
                return format!("{}{unit}", text.trim_end_matches('0'));
            }
        }
    }
    format!("{value}{}", u.units[0].0)
}

/// units.py `format_duration`: 5_484_000 -> "5.484ms".
pub fn format_duration(ns: u64) -> String {
    format(ns, &DURATION_UNITS)
}

/// units.py `format_rate`: 1_500_000_000 -> "1.5Gbps".
pub fn format_rate(bps: u64) -> String {
    format(bps, &RATE_UNITS)
}

// --- unknown_key and difflib --------------------------------------------------------------

/// `difflib.SequenceMatcher(None, a, b).ratio()` (CPython 3.11 Lib/difflib.py), elements are
/// code points. `b2j` is `__chain_b` of b.
fn ratio(a: &[char], b: &[char], b2j: &BTreeMap<char, Vec<usize>>) -> f64 {
    // get_matching_blocks: split around each longest match until none is left. Its sort and
    // merging of adjacent blocks do not change the total size, which is all ratio() uses.
    let mut matches = 0;
    let mut queue = vec![(0, a.len(), 0, b.len())];
    while let Some((alo, ahi, blo, bhi)) = queue.pop() {
        let (i, j, k) = find_longest_match(a, b, b2j, alo, ahi, blo, bhi);
        if k > 0 {
            matches += k;
            if alo < i && blo < j {
                queue.push((alo, i, blo, j));
            }
            if i + k < ahi && j + k < bhi {
                queue.push((i + k, ahi, j + k, bhi));
            }
        }
    }
    // _calculate_ratio
    let length = a.len() + b.len();
    if length == 0 {
        1.0
    } else {
        2.0 * matches as f64 / length as f64
    }
}

/// `SequenceMatcher.__chain_b` with `isjunk=None, autojunk=True`: where each element occurs in
/// b; when len(b) >= 200, elements occurring more than len(b) // 100 + 1 times ("popular") are
/// dropped (they are not junk: `bjunk` stays empty).
fn chain_b(b: &[char]) -> BTreeMap<char, Vec<usize>> {
    let mut b2j: BTreeMap<char, Vec<usize>> = BTreeMap::new();
    for (i, &c) in b.iter().enumerate() {
        b2j.entry(c).or_default().push(i);
    }
    if b.len() >= 200 {
        let ntest = b.len() / 100 + 1;
        b2j.retain(|_, idxs| idxs.len() <= ntest);
    }
    b2j
}

/// `SequenceMatcher.find_longest_match(alo, ahi, blo, bhi)`: the longest a[i..i+k] == b[j..j+k]
/// among elements still in b2j, earliest in a then in b, then extended on both sides over
/// equal elements that are not junk (popular ones included); the junk-extension loops never
/// run, as there is no junk.
fn find_longest_match(
    a: &[char],
    b: &[char],
    b2j: &BTreeMap<char, Vec<usize>>,
    alo: usize,
    ahi: usize,
    blo: usize,
    bhi: usize,
) -> (usize, usize, usize) {
    let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0);
    // j2len[j]: length of the match ending with a[i-1] and b[j].
    let mut j2len: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, c) in a.iter().enumerate().take(ahi).skip(alo) {
        let mut newj2len = BTreeMap::new();
        for &j in b2j.get(c).map_or(&[][..], Vec::as_slice) {
            if j < blo {
                continue;
            }
            if j >= bhi {
                break;
            }
            let k = j.checked_sub(1).and_then(|p| j2len.get(&p)).copied().unwrap_or(0) + 1;
            newj2len.insert(j, k);
            if k > bestsize {
                (besti, bestj, bestsize) = (i + 1 - k, j + 1 - k, k);
            }
        }
        j2len = newj2len;
    }
    while besti > alo && bestj > blo && a[besti - 1] == b[bestj - 1] {
        (besti, bestj, bestsize) = (besti - 1, bestj - 1, bestsize + 1);
    }
    while besti + bestsize < ahi && bestj + bestsize < bhi && a[besti + bestsize] == b[bestj + bestsize] {
        bestsize += 1;
    }
    (besti, bestj, bestsize)
}

/// `difflib.get_close_matches(word, possibilities, n=1, cutoff=0.6)`: the SequenceMatcher has
/// seq2 = word and seq1 = each possibility. real_quick_ratio() and quick_ratio() are upper
/// bounds of ratio() (same formula, larger counts), so only `ratio() >= cutoff` decides.
/// `heapq.nlargest(1, [(score, x)])` takes the highest score, and on a tie the larger string
/// (code point order, which is `str`'s order in Rust too).
fn close_match<'a>(word: &str, possibilities: &[&'a str]) -> Option<&'a str> {
    let b: Vec<char> = word.chars().collect();
    let b2j = chain_b(&b);
    let mut best: Option<(f64, &str)> = None;
    for &x in possibilities {
        let a: Vec<char> = x.chars().collect();
        let score = ratio(&a, &b, &b2j);
        if score >= 0.6 && best.is_none_or(|(s, y)| score > s || (score == s && x > y)) {
            best = Some((score, x));
        }
    }
    best.map(|(_, x)| x)
}

/// Past this many keys the list of allowed keys no longer reads as one line of an error.
const ALLOWED_LIST_MAX: usize = 16;

/// `_unknown_key`: the closest allowed key (difflib), else one equal ignoring case
/// (`str.lower()`; Rust's `to_lowercase` is the same full mapping with final sigma, though its
/// Unicode version may be newer than Python's), else the list of allowed keys; where that list
/// is too long for one line (`[[flows]]` has dozens), the allowed keys that begin with the
/// unknown key's first character, and where docs/spec.md lists them all.
pub fn unknown_key(key: &str, allowed: &[&str]) -> String {
    let close = close_match(key, allowed).or_else(|| {
        let lower = key.to_lowercase();
        allowed.iter().copied().find(|a| a.to_lowercase() == lower)
    });
    if let Some(c) = close {
        return format!("unknown key; did you mean \"{c}\"?");
    }
    if allowed.len() <= ALLOWED_LIST_MAX {
        return format!("unknown key; allowed: {}", allowed.join(", "));
    }
    let n = allowed.len();
    let first = key.chars().next().map(|c| c.to_lowercase().collect::<String>());
    let same: Vec<&str> = match &first {
        Some(f) => allowed.iter().copied().filter(|a| a.to_lowercase().starts_with(f.as_str())).collect(),
        None => Vec::new(),
    };
    match first {
        Some(f) if !same.is_empty() => format!(
            "unknown key; of the {n} allowed here, those beginning with \"{f}\": {} (docs/spec.md lists all)",
            same.join(", ")
        ),
        _ => format!("unknown key; none of the {n} allowed here is close (docs/spec.md lists them)"),
    }
}

// Expected values written by the Python functions these began as (CPython 3.11).
#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> Raw {
        Raw::Str(x.to_owned())
    }

    fn big(text: &str, bits: u32) -> Raw {
        Raw::BigInt { text: text.to_owned(), bits }
    }

    fn ints(v: &[i128]) -> Raw {
        Raw::List(v.iter().map(|&i| Raw::Int(i)).collect())
    }

    #[test]
    fn show_value_matches_python() {
        let cases: Vec<(Raw, &str)> = vec![
            (s(""), "\"\""),
            (s("abc"), "\"abc\""),
            (s("say \"hi\""), "\"say \\\"hi\\\"\""),
            (s("back\\slash"), "\"back\\\\slash\""),
            (s("line\u{a}break\u{d}\u{9}tab"), "\"line\\nbreak\\r\\ttab\""),
            (s("\u{8}\u{c}\u{0}\u{1}\u{1b}\u{1f}\u{7f}"), "\"\\b\\f\\u0000\\u0001\\u001b\\u001f\u{7f}\""),
            (s("émoji 🎉 ünï"), "\"émoji 🎉 ünï\""),
            (s("\u{2028}\u{85}\u{a0}"), "\"\u{2028}\u{85}\u{a0}\""),
            (s("'single'"), "\"'single'\""),
            (s(&"x".repeat(80)), "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx… (82 characters)"),
            (s(&"x".repeat(81)), "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx… (83 characters)"),
            (s(&"é".repeat(80)), "\"éééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé… (82 characters)"),
            (s(&"a\"".repeat(40)), "\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"… (122 characters)"),
            (s(&"a\"".repeat(50)), "\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"a\\\"… (152 characters)"),
            (s(&"y".repeat(160)), "\"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy… (162 characters)"),
            (s(&"y".repeat(161)), "\"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\"… (161 characters)"),
            (s(&"z\u{a}".repeat(100)), "\"z\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\nz\\n\"… (200 characters)"),
            (s(&"🎉".repeat(170)), "\"🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉\"… (170 characters)"),
            (s(&["q".repeat(77).as_str(), "\"\u{a}"].concat()), "\"qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq\\… (83 characters)"),
            (s(&["q".repeat(78).as_str(), "\u{9}", "r".repeat(100).as_str()].concat()), "\"qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq\"… (179 characters)"),
            (Raw::Bool(true), "true"),
            (Raw::Bool(false), "false"),
            (Raw::Int(0), "0"),
            (Raw::Int(-5), "-5"),
            (Raw::Int(42), "42"),
            (Raw::Int(9223372036854775808), "9223372036854775808"),
            (Raw::Int(170141183460469231731687303715884105727), "170141183460469231731687303715884105727"),
            (Raw::Int(-170141183460469231731687303715884105728), "-170141183460469231731687303715884105728"),
            (big("170141183460469231731687303715884105728", 128), "170141183460469231731687303715884105728"),
            (big("-170141183460469231731687303715884105729", 128), "-170141183460469231731687303715884105729"),
            (big("1000000000000000000000000000000000000000", 130), "1000000000000000000000000000000000000000"),
            (big("-1427247692705959881058285969449495136382746624", 151), "-1427247692705959881058285969449495136382746624"),
            (big("803469022129495137770981046170581301261101496891396417650688", 200), "803469022129495137770981046170581301261101496891396417650688"),
            (big("1606938044258990275541962092341162602522202993782792835301375", 200), "1606938044258990275541962092341162602522202993782792835301375"),
            (big("-1606938044258990275541962092341162602522202993782792835301375", 200), "-1606938044258990275541962092341162602522202993782792835301375"),
            (big("1606938044258990275541962092341162602522202993782792835301376", 201), "an integer of 201 bits"),
            (big("-1606938044258990275541962092341162602522202993782792835301376", 201), "an integer of 201 bits"),
            (big("100000000000000000000000000000000000000000000000000000000000000000000000000000000", 266), "an integer of 266 bits"),
            (big("10000000000000000000000000000000000000000000000000000000000000", 203), "an integer of 203 bits"),
            (big("1000000000000000000000000000000000000000000000000000000000000", 200), "1000000000000000000000000000000000000000000000000000000000000"),
            (big("-1000000000000000000000000000000000000000000000000000000000000", 200), "-1000000000000000000000000000000000000000000000000000000000000"),
            (Raw::Float(0.1), "0.1"),
            (Raw::Float(1e-05), "1e-05"),
            (Raw::Float(1e+16), "1e+16"),
            (Raw::Float(1e+22), "1e+22"),
            (Raw::Float(-0.0), "-0.0"),
            (Raw::Float(0.0), "0.0"),
            (Raw::Float(3.0), "3.0"),
            (Raw::Float(-2.5), "-2.5"),
            (Raw::Float(f64::INFINITY), "inf"),
            (Raw::Float(-f64::INFINITY), "-inf"),
            (Raw::Float(f64::NAN), "nan"),
            (Raw::Float(1.5e+300), "1.5e+300"),
            (Raw::Float(5e-324), "5e-324"),
            (Raw::Float(1.7976931348623157e+308), "1.7976931348623157e+308"),
            (Raw::Float(123456789.123), "123456789.123"),
            (Raw::Float(0.0001), "0.0001"),
            (Raw::Float(2.5e-05), "2.5e-05"),
            (Raw::Float(9007199254740992.0), "9007199254740992.0"),
            (Raw::Float(1000000000000000.0), "1000000000000000.0"),
            (Raw::Float(1.2345678901234568e+17), "1.2345678901234568e+17"),
            (Raw::Float(0.30000000000000004), "0.30000000000000004"),
            (Raw::List(vec![]), "[]"),
            (ints(&[1, 2, 3]), "[1, 2, 3]"),
            (ints(&[0, 1, 2, 3, 4, 5, 6, 7]), "[0, 1, 2, 3, 4, 5, 6, 7]"),
            (ints(&[0, 1, 2, 3, 4, 5, 6, 7, 8]), "[0, 1, 2, 3, 4, 5, 6, 7, ...]"),
            (Raw::List(vec![Raw::List(vec![Raw::Int(1), Raw::List(vec![Raw::Int(2), s("x")])]), Raw::Table(vec![("a".into(), Raw::Int(1))]), Raw::Bool(true), Raw::Float(1.5)]), "[[1, [2, \"x\"]], {...}, true, 1.5]"),
            (Raw::List(vec![s(&"a".repeat(30)); 3]), "[\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\", \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\", \"aaaaaaaaa… (102 characters)"),
            (Raw::List(vec![Raw::List(vec![ints(&[0, 1, 2, 3, 4, 5, 6, 7, 8]); 9])]), "[[[0, 1, 2, 3, 4, 5, 6, 7, ...], [0, 1, 2, 3, 4, 5, 6, 7, ...], [0, 1, 2, 3, 4,… (99 characters)"),
            (Raw::List(vec![s("\u{a}"); 20]), "[\"\\n\", \"\\n\", \"\\n\", \"\\n\", \"\\n\", \"\\n\", \"\\n\", \"\\n\", ...]"),
            (Raw::List(vec![Raw::Other("datetime.date(2024, 1, 1)".into()), Raw::Other("None".into())]), "[datetime.date(2024, 1, 1), None]"),
            (Raw::Table(vec![]), "{...}"),
            (Raw::Table(vec![("a".into(), Raw::Int(1)), ("b".into(), ints(&[1]))]), "{...}"),
            (Raw::Other("datetime.date(2024, 1, 1)".into()), "datetime.date(2024, 1, 1)"),
            (Raw::Other("None".into()), "None"),
            (Raw::Other("datetime.datetime(2024, 1, 1, 12, 30, tzinfo=datetime.timezone(datetime.timedelta(seconds=7200)))".into()), "datetime.datetime(2024, 1, 1, 12, 30, tzinfo=datetime.timezone(datetime.timedel… (97 characters)"),
            (Raw::Other("datetime.time(7, 45, 0, 999999)".into()), "datetime.time(7, 45, 0, 999999)"),
        ];
        for (v, want) in &cases {
            assert_eq!(show_value(v), *want, "{v:?}");
        }
    }

    /// (value, parse_duration, parse_rate); '@' stands for the "allowed" text of each.
    #[test]
    fn parse_matches_python() {
        let (d, r) = ("a duration string with unit ns|us|ms|s, e.g. \"10s\" or \"102.4ms\"", "a rate string with unit bps|kbps|Mbps|Gbps, e.g. \"100Mbps\" or \"1.5Gbps\"");
        type Want = Result<u64, &'static str>;
        let cases: Vec<(Raw, Want, Want)> = vec![
            (s("10s"), Ok(10000000000), Err("unknown unit 's'; @")),
            (s("102.4ms"), Ok(102400000), Err("unknown unit 'ms'; @")),
            (s("5.484ms"), Ok(5484000), Err("unknown unit 'ms'; @")),
            (s(" 3 us "), Ok(3000), Err("unknown unit 'us'; @")),
            (s("0.5ns"), Err("not a whole number of ns; @"), Err("unknown unit 'ns'; @")),
            (s("-1s"), Err("must not be negative; @"), Err("must not be negative; @")),
            (s("1e3s"), Err("@"), Err("@")),
            (s("+5"), Err("units are mandatory: @"), Err("units are mandatory: @")),
            (s("5"), Err("units are mandatory: @"), Err("units are mandatory: @")),
            (Raw::Int(5), Err("units are mandatory: @"), Err("units are mandatory: @")),
            (Raw::Float(5.0), Err("units are mandatory: @"), Err("units are mandatory: @")),
            (Raw::Bool(true), Err("units are mandatory: @"), Err("units are mandatory: @")),
            (s("10 parsecs"), Err("unknown unit 'parsecs'; @"), Err("unknown unit 'parsecs'; @")),
            (s("1.s"), Ok(1000000000), Err("unknown unit 's'; @")),
            (s(".5s"), Ok(500000000), Err("unknown unit 's'; @")),
            (s(""), Err("@"), Err("@")),
            (s(&["1".repeat(41).as_str(), "s"].concat()), Err("a number of 41 characters; at most 40: @"), Err("unknown unit 's'; @")),
            (s(&["1".repeat(40).as_str(), "s"].concat()), Err("too large: at most 18446744073709551615 ns (what the simulator's 64-bit counters hold)"), Err("unknown unit 's'; @")),
            (s(&["0.", "0".repeat(37).as_str(), "1s"].concat()), Err("not a whole number of ns; @"), Err("unknown unit 's'; @")),
            (s(&["0.", "0".repeat(38).as_str(), "1s"].concat()), Err("a number of 41 characters; at most 40: @"), Err("unknown unit 's'; @")),
            (s("18446744073709551615ns"), Ok(18446744073709551615), Err("unknown unit 'ns'; @")),
            (s("18446744073709551616ns"), Err("too large: at most 18446744073709551615 ns (what the simulator's 64-bit counters hold)"), Err("unknown unit 'ns'; @")),
            (s("18446744073709551.615us"), Ok(18446744073709551615), Err("unknown unit 'us'; @")),
            (s("18446744073709551.616us"), Err("too large: at most 18446744073709551615 ns (what the simulator's 64-bit counters hold)"), Err("unknown unit 'us'; @")),
            (s("18446744073.709551615s"), Ok(18446744073709551615), Err("unknown unit 's'; @")),
            (s("18446744073.709551616s"), Err("too large: at most 18446744073709551615 ns (what the simulator's 64-bit counters hold)"), Err("unknown unit 's'; @")),
            (s("184467440737.09551616s"), Err("too large: at most 18446744073709551615 ns (what the simulator's 64-bit counters hold)"), Err("unknown unit 's'; @")),
            (s("18446744073.7095516150s"), Ok(18446744073709551615), Err("unknown unit 's'; @")),
            (s("99999999999999999999999999999999999999s"), Err("too large: at most 18446744073709551615 ns (what the simulator's 64-bit counters hold)"), Err("unknown unit 's'; @")),
            (s("0s"), Ok(0), Err("unknown unit 's'; @")),
            (s("0.000s"), Ok(0), Err("unknown unit 's'; @")),
            (s("000000000000000000000000000000000000001s"), Ok(1000000000), Err("unknown unit 's'; @")),
            (s("0.000000001s"), Ok(1), Err("unknown unit 's'; @")),
            (s("0.0000000001s"), Err("not a whole number of ns; @"), Err("unknown unit 's'; @")),
            (s("0.0000000010s"), Ok(1), Err("unknown unit 's'; @")),
            (s("100Mbps"), Err("unknown unit 'Mbps'; @"), Ok(100000000)),
            (s("1.5Gbps"), Err("unknown unit 'Gbps'; @"), Ok(1500000000)),
            (s("1.5 Gbps"), Err("unknown unit 'Gbps'; @"), Ok(1500000000)),
            (s("1.5gbps"), Err("unknown unit 'gbps'; @"), Err("unknown unit 'gbps'; @")),
            (s("0.001kbps"), Err("unknown unit 'kbps'; @"), Ok(1)),
            (s("0.0001kbps"), Err("unknown unit 'kbps'; @"), Err("not a whole number of bps; @")),
            (s("1.0005kbps"), Err("unknown unit 'kbps'; @"), Err("not a whole number of bps; @")),
            (s("7 bps"), Err("unknown unit 'bps'; @"), Ok(7)),
            (s("1 2s"), Err("@"), Err("@")),
            (s("1.2.3s"), Err("@"), Err("@")),
            (s("5 s x"), Err("@"), Err("@")),
            (s("+5s"), Err("@"), Err("@")),
            (s("-"), Err("must not be negative; @"), Err("must not be negative; @")),
            (s("- 5"), Err("must not be negative; @"), Err("must not be negative; @")),
            (s("  -5s"), Err("must not be negative; @"), Err("must not be negative; @")),
            (s("1e3"), Err("units are mandatory: @"), Err("units are mandatory: @")),
            (s("1E+3"), Err("units are mandatory: @"), Err("units are mandatory: @")),
            (s("1.e5"), Err("units are mandatory: @"), Err("units are mandatory: @")),
            (s(".5"), Err("@"), Err("@")),
            (s("+.5"), Err("@"), Err("@")),
            (s("5."), Err("units are mandatory: @"), Err("units are mandatory: @")),
            (s("+5.e-7"), Err("units are mandatory: @"), Err("units are mandatory: @")),
            (s("+-12"), Err("@"), Err("@")),
            (s("12.5e-3"), Err("units are mandatory: @"), Err("units are mandatory: @")),
            (s("1e"), Err("unknown unit 'e'; @"), Err("unknown unit 'e'; @")),
            (s("\u{9}7ms\u{a}"), Ok(7000000), Err("unknown unit 'ms'; @")),
            (s("   "), Err("@"), Err("@")),
            (s("s"), Err("@"), Err("@")),
            (s("ms"), Err("@"), Err("@")),
            (s("5 5"), Err("@"), Err("@")),
            (s("1.5e3ms"), Err("@"), Err("@")),
            (s("1e3 s"), Err("@"), Err("@")),
            (s("1_000s"), Err("@"), Err("@")),
            (s("0x10s"), Err("@"), Err("@")),
            (s("nan"), Err("@"), Err("@")),
            (s("inf"), Err("@"), Err("@")),
            (s("5µs"), Err("@"), Err("@")),
            (s("5 μs"), Err("@"), Err("@")),
            (s("٣s"), Ok(3000000000), Err("unknown unit 's'; @")),
            (s("٣.٥ms"), Ok(3500000), Err("unknown unit 'ms'; @")),
            (s("٣"), Err("units are mandatory: @"), Err("units are mandatory: @")),
            (s("١٢٣٤٥٦٧٨٩٠١٢٣٤٥٦٧٨٩٠ns"), Ok(12345678901234567890), Err("unknown unit 'ns'; @")),
            (s("𝟓s"), Ok(5000000000), Err("unknown unit 's'; @")),
            (s("\u{3000} 4s\u{3000}"), Ok(4000000000), Err("unknown unit 's'; @")),
            (s("\u{1c}4s\u{1f}"), Ok(4000000000), Err("unknown unit 's'; @")),
            (s("4\u{a0}ms"), Ok(4000000), Err("unknown unit 'ms'; @")),
            (s("4s\u{85}"), Ok(4000000000), Err("unknown unit 's'; @")),
            (s("4\u{200b}s"), Err("@"), Err("@")),
            (s("5\u{2007}Mbps"), Err("unknown unit 'Mbps'; @"), Ok(5000000)),
            (ints(&[1]), Err("@"), Err("@")),
            (Raw::Table(vec![("a".into(), Raw::Int(1))]), Err("@"), Err("@")),
            (Raw::Other("None".into()), Err("@"), Err("@")),
            (big("100000000000000000000000000000000000000000000000000", 167), Err("units are mandatory: @"), Err("units are mandatory: @")),
            (Raw::Int(-3), Err("units are mandatory: @"), Err("units are mandatory: @")),
            (Raw::Other("datetime.date(2024, 1, 1)".into()), Err("@"), Err("@")),
        ];
        for (v, wd, wr) in &cases {
            assert_eq!(parse_duration(v), wd.map_err(|e| e.replace('@', d)), "{v:?}");
            assert_eq!(parse_rate(v), wr.map_err(|e| e.replace('@', r)), "{v:?}");
        }
    }

    /// (value, format_duration, format_rate)
    #[test]
    fn format_matches_python() {
        let cases: &[(u64, &str, &str)] = &[
            (0, "0ns", "0bps"),
            (1, "1ns", "1bps"),
            (7, "7ns", "7bps"),
            (999, "999ns", "999bps"),
            (1000, "1us", "1kbps"),
            (1001, "1.001us", "1.001kbps"),
            (1500, "1.5us", "1.5kbps"),
            (12345, "12.345us", "12.345kbps"),
            (999999, "999.999us", "999.999kbps"),
            (1000000, "1ms", "1Mbps"),
            (1000001, "1000.001us", "1000.001kbps"),
            (1000050, "1000.05us", "1000.05kbps"),
            (1000500, "1000.5us", "1000.5kbps"),
            (1500000, "1.5ms", "1.5Mbps"),
            (5484000, "5.484ms", "5.484Mbps"),
            (102400000, "102.4ms", "102.4Mbps"),
            (999999999, "999999.999us", "999999.999kbps"),
            (1000000000, "1s", "1Gbps"),
            (1000000001, "1000000.001us", "1000000.001kbps"),
            (1234567890, "1234567.89us", "1234567.89kbps"),
            (1234000000, "1.234s", "1.234Gbps"),
            (1500000000, "1.5s", "1.5Gbps"),
            (60000000000, "60s", "60Gbps"),
            (3600000000000, "3600s", "3600Gbps"),
            (9223372036854775808, "9223372036854775.808us", "9223372036854775.808kbps"),
            (18446744073709551615, "18446744073709551.615us", "18446744073709551.615kbps"),
            (10000000000000000000, "10000000000s", "10000000000Gbps"),
            (18446744073709000000, "18446744073.709s", "18446744073.709Gbps"),
        ];
        for &(v, d, r) in cases {
            assert_eq!((format_duration(v).as_str(), format_rate(v).as_str()), (d, r), "{v}");
        }
    }

    fn float(x: &str) -> f64 {
        match x {
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            "nan" => f64::NAN,
            "-nan" => -f64::NAN,
            _ => x.parse().expect("a float"),
        }
    }

    /// (value as read by float(), f"{x:g}")
    #[test]
    fn fmt_g_matches_python() {
        let cases: &[(&str, &str)] = &[
            ("0.0", "0"),
            ("1.0", "1"),
            ("8.0", "8"),
            ("-30.0", "-30"),
            ("40.0", "40"),
            ("100000.0", "100000"),
            ("0.01", "0.01"),
            ("1000.0", "1000"),
            ("1000000.0", "1e+06"),
            ("123456789.0", "1.23457e+08"),
            ("-0.0", "-0"),
            ("0.5", "0.5"),
            ("1e-05", "1e-05"),
            ("0.0001", "0.0001"),
            ("0.00012345678", "0.000123457"),
            ("1234565.0", "1.23456e+06"),
            ("1234575.0", "1.23458e+06"),
            ("123456.5", "123456"),
            ("999999.5", "1e+06"),
            ("999999.4", "999999"),
            ("1e+100", "1e+100"),
            ("-1e-100", "-1e-100"),
            ("inf", "inf"),
            ("-inf", "-inf"),
            ("nan", "nan"),
            ("5e-324", "4.94066e-324"),
            ("2.5", "2.5"),
            ("300.0", "300"),
            ("100000.0", "100000"),
            ("1e+16", "1e+16"),
            ("0.1", "0.1"),
            ("0.3333333333333333", "0.333333"),
            ("6.666666666666667e-06", "6.66667e-06"),
        ];
        for &(x, want) in cases {
            assert_eq!(fmt_g(float(x)), want, "{x}");
        }
    }

    /// (value as the bits of the double, repr)
    #[test]
    fn float_repr_matches_python() {
        let cases: &[(u64, &str)] = &[
            (0x0000000000000000, "0.0"),
            (0x8000000000000000, "-0.0"),
            (0x3ff0000000000000, "1.0"),
            (0x4008000000000000, "3.0"),
            (0x3fb999999999999a, "0.1"),
            (0x3fd3333333333334, "0.30000000000000004"),
            (0x3ee4f8b588e368f1, "1e-05"),
            (0x3f1a36e2eb1c432d, "0.0001"),
            (0x3f1f75104d551d69, "0.00012"),
            (0x4341c37937e08000, "1e+16"),
            (0x430c6bf526340000, "1000000000000000.0"),
            (0x4341c37937e07fff, "9999999999999998.0"),
            (0x4480f0cf064dd592, "1e+22"),
            (0x7e41eb2d66005835, "1.5e+300"),
            (0x0000000000000001, "5e-324"),
            (0x0010000000000000, "2.2250738585072014e-308"),
            (0x7fefffffffffffff, "1.7976931348623157e+308"),
            (0x7ff0000000000000, "inf"),
            (0xfff0000000000000, "-inf"),
            (0x7ff8000000000000, "nan"),
            (0xfff8000000000000, "nan"),
            (0x430a9176e7b9280a, "934786159289601.2"),
            (0xc30720c189161cf2, "-813742508131230.2"),
            (0x419d6f34547df3b6, "123456789.123"),
            (0xbe90c6f7a0b5ed8d, "-2.5e-07"),
            (0x3fd5555555555555, "0.3333333333333333"),
            (0x4059000000000000, "100.0"),
            (0x4345ee2a2eb5a5c4, "1.2345678901234568e+16"),
        ];
        for &(bits, want) in cases {
            assert_eq!(float_repr(f64::from_bits(bits)), want, "{bits:x}");
        }
    }

    const ALLOWED: &[&str] = &["duration", "seed", "warmup", "stations", "flows", "channel", "record"];

    fn v(x: &[&str]) -> Vec<String> {
        x.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_long_list_of_allowed_keys_is_narrowed_to_one_line() {
        let many: Vec<String> = (0..40).map(|i| format!("{}key_{i}", if i % 2 == 0 { "a" } else { "b" })).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        let m = unknown_key("Azzzzzzzzzzzzzz", &refs);
        assert!(m.starts_with("unknown key; of the 40 allowed here, those beginning with \"a\": akey_0, akey_2,"), "{m}");
        assert!(m.ends_with("(docs/spec.md lists all)") && !m.contains("bkey"), "{m}");
        let m = unknown_key("qqqqqqqqqqqq", &refs);
        assert_eq!(m, "unknown key; none of the 40 allowed here is close (docs/spec.md lists them)");
        assert_eq!(unknown_key("", &refs), m);
        assert!(unknown_key("akey_1", &refs).contains("did you mean"));
    }

    #[test]
    fn unknown_key_matches_python() {
        let cases: Vec<(String, Vec<String>, &str)> = vec![
            ("duraton".to_owned(), v(ALLOWED), "unknown key; did you mean \"duration\"?"),
            ("Duration".to_owned(), v(ALLOWED), "unknown key; did you mean \"duration\"?"),
            ("DURATION".to_owned(), v(ALLOWED), "unknown key; did you mean \"duration\"?"),
            ("xyz".to_owned(), v(ALLOWED), "unknown key; allowed: duration, seed, warmup, stations, flows, channel, record"),
            ("".to_owned(), v(ALLOWED), "unknown key; allowed: duration, seed, warmup, stations, flows, channel, record"),
            ("seeds".to_owned(), v(ALLOWED), "unknown key; did you mean \"seed\"?"),
            ("warm_up".to_owned(), v(ALLOWED), "unknown key; did you mean \"warmup\"?"),
            ("stat".to_owned(), v(ALLOWED), "unknown key; did you mean \"stations\"?"),
            ("flow".to_owned(), v(ALLOWED), "unknown key; did you mean \"flows\"?"),
            ("chanel".to_owned(), v(ALLOWED), "unknown key; did you mean \"channel\"?"),
            ("durätion".to_owned(), v(ALLOWED), "unknown key; did you mean \"duration\"?"),
            ("recorded".to_owned(), v(ALLOWED), "unknown key; did you mean \"record\"?"),
            ("d".to_owned(), v(ALLOWED), "unknown key; allowed: duration, seed, warmup, stations, flows, channel, record"),
            ("abc".to_owned(), v(&["abx", "aby"]), "unknown key; did you mean \"aby\"?"),
            ("abc".to_owned(), v(&["aby", "abx"]), "unknown key; did you mean \"aby\"?"),
            ("abc".to_owned(), v(&["xbc", "abx", "axc"]), "unknown key; did you mean \"xbc\"?"),
            ("ΣΑΣ".to_owned(), v(&["σας", "σασ"]), "unknown key; did you mean \"σας\"?"),
            ("İ".to_owned(), v(&["i̇", "i"]), "unknown key; did you mean \"i̇\"?"),
            ("x".to_owned(), v(&[]), "unknown key; allowed: "),
            ("a".to_owned(), v(&["", "b"]), "unknown key; allowed: , b"),
            ("".to_owned(), v(&[""]), "unknown key; did you mean \"\"?"),
            ("ab".to_owned(), v(&["ba", "ab", "ab"]), "unknown key; did you mean \"ab\"?"),
            ("abcd".to_owned(), v(&["bcda", "dabc"]), "unknown key; did you mean \"dabc\"?"),
            ("duration_".repeat(25), v(&["duration", &"duration_".repeat(25)]), "unknown key; did you mean \"{1}\"?"),
            ("duration_".repeat(25), v(&["duration", &"Duration_".repeat(25)]), "unknown key; did you mean \"{1}\"?"),
            (["a".repeat(100).as_str(), "b".repeat(150).as_str()].concat(), v(&["ab", &["a".repeat(100).as_str(), "b".repeat(150).as_str()].concat()]), "unknown key; did you mean \"{1}\"?"),
            (["ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "_".repeat(190).as_str()].concat(), v(&[&["ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "_".repeat(190).as_str()].concat(), "seed"]), "unknown key; did you mean \"{0}\"?"),
            (["ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "_".repeat(190).as_str()].concat(), v(&[&["ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "_".repeat(100).as_str()].concat()]), "unknown key; did you mean \"{0}\"?"),
            (["ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "_".repeat(190).as_str()].concat(), v(&[&"_".repeat(252)]), "unknown key; allowed: {0}"),
            (["ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "_".repeat(190).as_str()].concat(), v(&[&["9876543210zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA", "_".repeat(190).as_str()].concat()]), "unknown key; allowed: {0}"),
            (["ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "_".repeat(190).as_str()].concat(), v(&[&["ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn", "_".repeat(30).as_str()].concat(), "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"]), "unknown key; allowed: {0}, {1}"),
            (["_".repeat(190).as_str(), "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"].concat(), v(&[&["_", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"].concat(), &["_".repeat(150).as_str(), "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"].concat()]), "unknown key; did you mean \"{1}\"?"),
            ("k".repeat(199), v(&[&"k".repeat(150), &"k".repeat(120)]), "unknown key; did you mean \"{0}\"?"),
            ("k".repeat(200), v(&[&"k".repeat(150)]), "unknown key; did you mean \"{0}\"?"),
        ];
        for (key, allowed, want) in &cases {
            let want = (allowed.iter().enumerate()).fold(want.to_string(), |w, (i, a)| w.replace(&format!("{{{i}}}"), a));
            let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
            assert_eq!(unknown_key(key, &allowed), want, "{key:?} {allowed:?}");
        }
    }
}
