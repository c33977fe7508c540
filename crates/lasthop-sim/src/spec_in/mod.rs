//! The spec as users write it: a TOML document in, the normalized spec (docs/spec.md) out.
//!
//! [`normalize`] checks structure, types, ranges and the cross-field rules docs/spec.md states,
//! fills every default, converts quantities to integers in base units (ns, bit/s), expands
//! station groups and flows (one normalized flow per station) and returns the typed
//! [`crate::Spec`] it built, that spec's canonical JSON (`canonical.rs`, written by
//! [`normalize::spec_json`]) and the TOML table of each normalized station and flow. The first
//! problem found is returned as a [`SpecError`] naming the TOML key, the value and what is
//! allowed. The 802.11 rules of the normalized spec are checked afterwards by
//! [`crate::Spec::problems`].
//!
//! The document arrives as a [`Raw`] tree: from Python's `tomllib` (through the native
//! module, after `--vary` overrides) or from the `toml` crate ([`parse_toml`]) in the
//! standalone tools. Each key's type, default and allowed values are declared once, at the
//! call that reads it; [`record`] lets `lasthop schema` watch those calls and write the JSON
//! Schema of the spec from them.

pub mod normalize;
pub mod pages;
pub mod raw;

pub use normalize::{normalize, Normalized};

/// At most this many problems are listed for one document.
pub const MAX_ERRORS: usize = 20;

/// [`normalize`], listing every problem: after each one, the offending key is taken out of
/// (a copy of) the document, so that its default stands in, and the document is read again.
/// Stops at a problem that no key's removal can get past (a required key, a table that is not
/// one) or at [`MAX_ERRORS`]. The first problem is the one [`normalize`] returns.
pub fn normalize_all(doc: &Raw, default_name: &str) -> Result<Normalized, Vec<SpecError>> {
    let mut errors: Vec<SpecError> = Vec::new();
    let mut doc = std::borrow::Cow::Borrowed(doc);
    loop {
        match normalize(&doc, default_name) {
            Ok(n) if errors.is_empty() => return Ok(n),
            Ok(_) => return Err(errors),
            Err(e) => {
                let repeat = errors.iter().any(|x| x.path == e.path);
                if repeat {
                    return Err(errors);
                }
                let path = e.path.clone();
                errors.push(e);
                if errors.len() >= MAX_ERRORS || !remove_at(doc.to_mut(), &path) {
                    return Err(errors);
                }
            }
        }
    }
}

/// The steps of a key path (`a.b[2].c`, where a key may be quoted as [`shown_key`] writes
/// it: `a."x.y"`); None when it cannot be read back (a clipped key).
fn path_steps(path: &str) -> Option<Vec<(String, Option<usize>)>> {
    let mut steps = Vec::new();
    let mut rest = path;
    loop {
        let (name, after) = if rest.starts_with('"') {
            // A JSON string: up to the first quote not escaped by a backslash.
            let b = rest.as_bytes();
            let mut i = 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            let quoted = rest.get(..=i)?;
            (serde_json::from_str::<String>(quoted).ok()?, &rest[quoted.len()..])
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            (rest[..end].to_owned(), &rest[end..])
        };
        let (index, after) = match after.strip_prefix('[') {
            Some(r) => {
                let (i, r) = r.split_once(']')?;
                (Some(i.parse().ok()?), r)
            }
            None => (None, after),
        };
        steps.push((name, index));
        match after.strip_prefix('.') {
            Some(r) => rest = r,
            None if after.is_empty() => return Some(steps),
            None => return None,
        }
    }
}

/// Remove the key at `path` (`a.b[2].c`) from its table; false when there is none.
fn remove_at(doc: &mut Raw, path: &str) -> bool {
    let Some(steps) = path_steps(path) else { return false };
    let Some(((last, last_index), head)) = steps.split_last() else { return false };
    if last_index.is_some() {
        return false;
    }
    let mut at = doc;
    for (name, index) in head {
        let Raw::Table(t) = at else { return false };
        let Some(v) = t.iter_mut().find(|(k, _)| k == name).map(|(_, v)| v) else { return false };
        at = match (index, v) {
            (None, v) => v,
            (Some(i), Raw::List(l)) if *i < l.len() => &mut l[*i],
            _ => return false,
        };
    }
    let Raw::Table(t) = at else { return false };
    let before = t.len();
    t.retain(|(k, _)| k != last);
    t.len() < before
}
pub use raw::Raw;

use raw::{fmt_g, parse_duration, parse_rate, show_value, unknown_key, SHOW_MAX};
use serde_json::{json, Value};
use std::cell::RefCell;

/// One problem in a spec: the TOML key path, the offending value (as the user wrote it),
/// what is allowed. Displayed as `path = value: allowed`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    pub path: String,
    pub value: String,
    pub allowed: String,
}

impl SpecError {
    pub fn new(path: impl Into<String>, value: impl Into<String>, allowed: impl Into<String>) -> Self {
        SpecError { path: path.into(), value: value.into(), allowed: allowed.into() }
    }
}

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} = {}: {}", self.path, self.value, self.allowed)
    }
}

pub type Res<T> = Result<T, SpecError>;

/// A key's default as declared where it is read.
#[derive(Clone, Debug, PartialEq)]
pub enum Default {
    /// The key must be given.
    Required,
    /// Absent means "not set" (null in the normalized spec).
    Null,
    /// The value used when the key is absent, in the normalized spec's units.
    Is(Value),
}

/// One read of a key: what [`record`] collects.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub path: String,
    pub default: Default,
    /// A JSON Schema fragment of the accepted TOML values; None when the reader checks the
    /// value itself (a list of waypoints, a utility curve).
    pub schema: Option<Value>,
    /// The one-line description of what is allowed.
    pub allowed: String,
}

thread_local! {
    static RECORDER: RefCell<Option<Vec<Record>>> = const { RefCell::new(None) };
}

/// Run `f` and return, with its result, every key read it made (in order).
pub fn record<T>(f: impl FnOnce() -> T) -> (T, Vec<Record>) {
    RECORDER.with(|r| *r.borrow_mut() = Some(Vec::new()));
    let out = f();
    let recs = RECORDER.with(|r| r.borrow_mut().take()).unwrap_or_default();
    (out, recs)
}

fn note(path: &str, default: Default, schema: Option<Value>, allowed: &str) {
    RECORDER.with(|r| {
        if let Some(v) = r.borrow_mut().as_mut() {
            v.push(Record { path: path.to_owned(), default, schema, allowed: allowed.to_owned() });
        }
    });
}

/// The keys each table allows, in the order docs/spec.md lists them.
pub const SECTIONS: [(&str, &[&str]); 15] = [
    ("", &["name", "description", "sim", "phy", "mac", "ap", "wired", "channel", "stations", "flows", "aggctl", "vwire", "emu"]),
    ("emu", &["ap_host"]),
    ("vwire", &["enabled", "period", "efficiency", "relay_buffer", "sndbuf", "tsq", "sample", "work_conserving", "window_clamp"]),
    ("channel", &["path_loss", "exponent", "tx_power_dbm", "noise_figure_db", "interference", "fading"]),
    ("channel.interference", &["on", "off", "inr_db"]),
    ("channel.fading", &["model", "doppler_hz", "k_db"]),
    ("sim", &["duration", "warmup", "seed", "bin"]),
    ("phy", &["standard", "band", "channel_width", "guard_interval", "control_rate"]),
    (
        "mac",
        &[
            "aggregation", "max_ampdu_mpdus", "max_ampdu_bytes", "max_ppdu_time", "retry_limit", "beacon_interval",
            "access_category", "cw_min", "cw_max", "aifsn", "txop_limit", "eifs_after_collision", "aggregation_min_rate",
            "max_amsdu_bytes", "rx_delivery", "ampdu_formation", "ofdma",
        ],
    ),
    ("mac.ofdma", &["dl", "ul", "scheduler", "max_users", "ack", "mu_edca_aifsn", "mu_edca_cw_min", "mu_edca_cw_max", "mu_edca_timer"]),
    (
        "ap",
        &[
            "queue_limit", "scheduler", "qdisc", "fq_aqm", "driver", "hw_queue_limit", "ath9k_qdepth", "qdisc_scope", "aql", "aql_limit_low", "aql_limit_high",
            "aql_threshold", "buffer_sizer", "wqm_limit", "wqm_interval", "wqm_variant", "pie_estimator",
            "dequeue_cost", "ecn", "ce_threshold", "ce_threshold_l4s_only", "air_ce_threshold", "cw_min", "cw_max",
            "aifsn", "txop_limit", "ack_filter", "tcp_small_queues", "rts",
        ],
    ),
    ("wired", &["rate", "delay", "queue_limit", "loss", "loss_up", "qdisc", "server_nic"]),
    (
        "stations",
        &[
            "count", "mcs", "nss", "error_model", "per", "snr_db", "queue_limit", "qdisc", "rate_control", "distance_m",
            "walk_m", "speed_mps", "waypoints", "repeat", "parent", "hop_channel", "nss_change", "device", "gro", "airtime_weight", "ampdu_mpdus_tx", "ba_window_rx", "rts",
            "tcp_small_queues",
        ],
    ),
    (
        "flows",
        &[
            "stations", "direction", "pattern", "rate", "packet_size", "start", "stop", "cc", "bytes", "pacing",
            "hystart", "extra_acked", "app", "request_bytes", "response_bytes", "think_time", "requests", "interval",
            "profile", "ack_policy", "zero_rtt", "initial_cwnd", "page", "connections", "idle", "idle_timeout",
            "reconnect", "history", "history_guard", "history_events", "split", "split_wired_cc", "app_rate", "app_class", "utility",
            "ac", "ecn", "send_buffer", "tso", "pacer",
        ],
    ),
    (
        "aggctl",
        &[
            "target_aggregation", "interval", "k0", "initial_rate", "min_rate", "max_rate", "allocation", "hold_time",
            "decay_after", "decay_factor", "gap_threshold", "clock_resolution", "clock_jitter", "report_rate",
            "report_loss", "report_blackout",
        ],
    ),
];

/// The keys table `name` allows.
pub fn section(name: &str) -> &'static [&'static str] {
    SECTIONS.iter().find(|s| s.0 == name).map(|s| s.1).unwrap_or(&[])
}

/// A value that does not pass a reader's check; `allowed` (if not empty) replaces the reader's
/// own description in the error.
struct Bad(String);

const EMPTY: &[(String, Raw)] = &[];

/// A TOML table at `path` whose keys were checked against its section's on construction.
pub(crate) struct Table<'a> {
    data: &'a [(String, Raw)],
    path: String,
}

pub(crate) const DURATION_TEXT: &str = "a duration such as \"10s\" or \"102.4ms\"";
pub(crate) const RATE_TEXT: &str = "a rate such as \"100Mbps\" or \"1.5Gbps\"";

/// A TOML integer as i128 (a larger one saturates: every bounded reader refuses it).
fn int_of(v: &Raw) -> Option<i128> {
    match v {
        Raw::Int(i) => Some(*i),
        Raw::BigInt { text, .. } => Some(if text.starts_with('-') { i128::MIN } else { i128::MAX }),
        _ => None,
    }
}

/// A key as its error's path shows it: as written when TOML allows it bare (ASCII letters,
/// digits, `_` and `-`), otherwise quoted (an empty key, a dot or a space in it; clipped like
/// any shown string), so that the path always names the key.
fn shown_key(k: &str) -> String {
    let bare = !k.is_empty() && k.len() <= SHOW_MAX && k.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-');
    if bare {
        k.to_owned()
    } else {
        show_value(&Raw::Str(k.to_owned()))
    }
}

impl<'a> Table<'a> {
    /// `data` (None: an absent table, read as empty) as the table at `path` of section `sec`;
    /// `what` says what was expected when it is not a table.
    pub(crate) fn new(data: Option<&'a Raw>, path: &str, sec: &str, what: &str) -> Res<Table<'a>> {
        let data = match data {
            None => EMPTY,
            Some(Raw::Table(t)) => t.as_slice(),
            Some(other) => {
                return Err(SpecError::new(if path.is_empty() { "(top level)" } else { path }, show_value(other), what))
            }
        };
        let t = Table { data, path: path.to_owned() };
        let allowed = section(sec);
        for (k, v) in data {
            if !allowed.contains(&k.as_str()) {
                return Err(SpecError::new(t.key(&shown_key(k)), show_value(v), unknown_key(k, allowed)));
            }
        }
        Ok(t)
    }

    pub(crate) fn key(&self, name: &str) -> String {
        if self.path.is_empty() {
            name.to_owned()
        } else {
            format!("{}.{}", self.path, name)
        }
    }

    pub(crate) fn has(&self, name: &str) -> bool {
        self.data.iter().any(|(k, _)| k == name)
    }

    pub(crate) fn value(&self, name: &str) -> Option<&'a Raw> {
        self.data.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    /// The raw value of `name`, or None when absent (for keys the caller checks by hand).
    pub(crate) fn raw(&self, name: &str) -> Option<&'a Raw> {
        note(&self.key(name), Default::Required, None, "");
        self.value(name)
    }

    /// The error for key `name`'s value: `allowed` is what would have been accepted.
    pub(crate) fn fail(&self, name: &str, allowed: impl Into<String>) -> SpecError {
        let shown = match self.raw(name) {
            Some(v) => show_value(v),
            None => "(missing)".to_owned(),
        };
        SpecError::new(self.key(name), shown, allowed)
    }

    /// Read `name` with `check`: absent gives the default (or an error when required).
    fn get<T>(
        &self,
        name: &str,
        default: Option<Option<T>>,
        def_json: Default,
        check: impl FnOnce(&Raw) -> Result<T, Bad>,
        allowed: &str,
        schema: Option<Value>,
    ) -> Res<Option<T>> {
        note(&self.key(name), def_json, schema, allowed);
        match self.value(name) {
            None => match default {
                None => Err(SpecError::new(self.key(name), "(missing)", format!("required: {allowed}"))),
                Some(d) => Ok(d),
            },
            Some(v) => match check(v) {
                Ok(x) => Ok(Some(x)),
                Err(Bad(why)) => Err(self.fail(name, if why.is_empty() { allowed.to_owned() } else { why })),
            },
        }
    }

    /// An integer in [lo, hi]; `allowed` replaces the range text. `default` None: required.
    pub(crate) fn int_opt(
        &self,
        name: &str,
        default: Option<Option<i128>>,
        lo: Option<i128>,
        hi: Option<i128>,
        allowed: Option<&str>,
    ) -> Res<Option<i128>> {
        let text = allowed.map(str::to_owned).unwrap_or_else(|| range_text("an integer", lo, hi));
        let mut schema = json!({"type": "integer"});
        if let Some(l) = lo {
            schema["minimum"] = json!(l as i64);
        }
        if let Some(h) = hi {
            schema["maximum"] = if h > u64::MAX as i128 { json!(h as f64) } else { json!(h as u64) };
        }
        let dj = match &default {
            None => Default::Required,
            Some(None) => Default::Null,
            Some(Some(d)) => Default::Is(json!(*d as i64)),
        };
        let check = |v: &Raw| {
            let i = int_of(v).ok_or_else(|| Bad(text.clone()))?;
            if lo.is_some_and(|l| i < l) || hi.is_some_and(|h| i > h) {
                return Err(Bad(text.clone()));
            }
            Ok(i)
        };
        self.get(name, default, dj, check, &text, Some(schema))
    }

    /// An integer in [lo, hi] with a default.
    pub(crate) fn int(&self, name: &str, default: i128, lo: Option<i128>, hi: Option<i128>) -> Res<i128> {
        Ok(self.int_opt(name, Some(Some(default)), lo, hi, None)?.unwrap_or(default))
    }

    /// An integer in [lo, hi] with a default, described by `allowed`.
    pub(crate) fn int_text(&self, name: &str, default: Option<i128>, lo: i128, hi: i128, allowed: &str) -> Res<i128> {
        let d = default.map(Some);
        Ok(self.int_opt(name, d, Some(lo), Some(hi), Some(allowed))?.unwrap_or_default())
    }

    /// One of `choices` (integers); `why` follows the list in the error.
    pub(crate) fn choice_int(&self, name: &str, default: i128, choices: &[i128], why: &str) -> Res<i128> {
        let list: Vec<String> = choices.iter().map(|c| c.to_string()).collect();
        let text = format!("one of {}{}", list.join("|"), why);
        let check = |v: &Raw| match v {
            Raw::Int(i) if choices.contains(i) => Ok(*i),
            _ => Err(Bad(text.clone())),
        };
        let schema = json!({"enum": choices.iter().map(|&c| c as i64).collect::<Vec<_>>()});
        let d = Default::Is(json!(default as i64));
        Ok(self.get(name, Some(Some(default)), d, check, &text, Some(schema))?.unwrap_or(default))
    }

    /// A number in [lo, hi) (or [lo, hi] when `closed`); TOML integers are accepted.
    pub(crate) fn float_opt(&self, name: &str, default: Option<f64>, lo: f64, hi: f64, closed: bool) -> Res<Option<f64>> {
        self.float_read(name, Some(default), lo, hi, closed)
    }

    /// A number in [lo, hi] (or [lo, hi) when not `closed`) that must be given.
    pub(crate) fn float_required(&self, name: &str, lo: f64, hi: f64, closed: bool) -> Res<f64> {
        Ok(self.float_read(name, None, lo, hi, closed)?.unwrap_or_default())
    }

    /// `default` None: required; Some(None): null when absent.
    fn float_read(&self, name: &str, default: Option<Option<f64>>, lo: f64, hi: f64, closed: bool) -> Res<Option<f64>> {
        let text = format!("a number in [{}, {}{}", fmt_g(lo), fmt_g(hi), if closed { "]" } else { ")" });
        let check = |v: &Raw| {
            let f = match v {
                Raw::Int(i) => *i as f64,
                Raw::Float(f) => *f,
                _ => return Err(Bad(text.clone())),
            };
            if !f.is_finite() || f < lo || f > hi || (f == hi && !closed) {
                return Err(Bad(text.clone()));
            }
            Ok(f)
        };
        let top = if closed { "maximum" } else { "exclusiveMaximum" };
        let schema = json!({"type": "number", "minimum": lo, top: hi});
        let dj = match default {
            None => Default::Required,
            Some(None) => Default::Null,
            Some(Some(d)) => Default::Is(json!(d)),
        };
        self.get(name, default, dj, check, &text, Some(schema))
    }

    pub(crate) fn float(&self, name: &str, default: f64, lo: f64, hi: f64, closed: bool) -> Res<f64> {
        Ok(self.float_opt(name, Some(default), lo, hi, closed)?.unwrap_or(default))
    }

    pub(crate) fn bool_opt(&self, name: &str, default: Option<bool>) -> Res<Option<bool>> {
        let check = |v: &Raw| match v {
            Raw::Bool(b) => Ok(*b),
            _ => Err(Bad("true or false".into())),
        };
        let dj = default.map_or(Default::Null, |d| Default::Is(json!(d)));
        self.get(name, Some(default), dj, check, "true or false", Some(json!({"type": "boolean"})))
    }

    pub(crate) fn bool(&self, name: &str, default: bool) -> Res<bool> {
        Ok(self.bool_opt(name, Some(default))?.unwrap_or(default))
    }

    /// A string; `default` None: required.
    pub(crate) fn str(&self, name: &str, default: Option<&str>, allowed: &str) -> Res<String> {
        let check = |v: &Raw| match v {
            Raw::Str(s) => Ok(s.clone()),
            _ => Err(Bad(allowed.to_owned())),
        };
        let d = default.map(|d| Some(d.to_owned()));
        let dj = default.map_or(Default::Required, |d| Default::Is(json!(d)));
        Ok(self.get(name, d, dj, check, allowed, Some(json!({"type": "string"})))?.unwrap_or_default())
    }

    /// One of `choices`; `default` Some(None): absent is null; None: required.
    pub(crate) fn choice_opt(
        &self,
        name: &str,
        default: Option<Option<&str>>,
        choices: &[&str],
        why: &str,
    ) -> Res<Option<String>> {
        let list: Vec<String> = choices.iter().map(|c| format!("\"{c}\"")).collect();
        let text = format!("one of {}{}", list.join("|"), why);
        let check = |v: &Raw| match v {
            Raw::Str(s) if choices.contains(&s.as_str()) => Ok(s.clone()),
            _ => Err(Bad(text.clone())),
        };
        let dj = match default {
            None => Default::Required,
            Some(None) => Default::Null,
            Some(Some(d)) => Default::Is(json!(d)),
        };
        let d = default.map(|o| o.map(str::to_owned));
        self.get(name, d, dj, check, &text, Some(json!({"enum": choices})))
    }

    pub(crate) fn choice(&self, name: &str, default: &str, choices: &[&str], why: &str) -> Res<String> {
        Ok(self.choice_opt(name, Some(Some(default)), choices, why)?.unwrap_or_else(|| default.to_owned()))
    }

    /// One of the value list `E` (`names.rs`): its names are the choices.
    pub(crate) fn pick<E: crate::spec::names::Named>(&self, name: &str, default: E, why: &str) -> Res<E> {
        let d = E::NAMES[E::ALL.iter().position(|&e| e == default).expect("a variant")];
        let n = self.choice(name, d, E::NAMES, why)?;
        Ok(E::ALL[E::NAMES.iter().position(|&x| x == n).expect("a listed name")])
    }

    /// One of `choices` (the first is the default), or a boolean standing for `on` (true) or
    /// `off` (false).
    pub(crate) fn choice_or_bool(&self, name: &str, choices: &[&str], on: &str, off: &str) -> Res<String> {
        let list: Vec<String> = choices.iter().map(|c| format!("\"{c}\"")).collect();
        let text = format!("one of {}, or true (\"{on}\") or false (\"{off}\")", list.join("|"));
        let check = |v: &Raw| match v {
            Raw::Str(s) if choices.contains(&s.as_str()) => Ok(s.clone()),
            Raw::Bool(b) => Ok(if *b { on } else { off }.to_owned()),
            _ => Err(Bad(text.clone())),
        };
        let schema = json!({"oneOf": [{"enum": choices}, {"type": "boolean"}]});
        let d = choices[0].to_owned();
        Ok(self.get(name, Some(Some(d.clone())), Default::Is(json!(d)), check, &text, Some(schema))?.unwrap_or(d))
    }

    /// A duration in ns (`positive`: not zero); `default` None: required.
    pub(crate) fn duration(&self, name: &str, default: Option<u64>, positive: bool) -> Res<u64> {
        let check = |v: &Raw| {
            let ns = parse_duration(v).map_err(Bad)?;
            if positive && ns == 0 {
                return Err(Bad("must be > 0, e.g. \"10s\"".into()));
            }
            Ok(ns)
        };
        let dj = default.map_or(Default::Required, |d| Default::Is(json!(d)));
        let schema = quantity_schema(&["ns", "us", "ms", "s"]);
        Ok(self.get(name, default.map(Some), dj, check, DURATION_TEXT, Some(schema))?.unwrap_or_default())
    }

    /// An optional duration (null when absent).
    pub(crate) fn duration_opt(&self, name: &str) -> Res<Option<u64>> {
        let check = |v: &Raw| parse_duration(v).map_err(Bad);
        let schema = quantity_schema(&["ns", "us", "ms", "s"]);
        self.get(name, Some(None), Default::Null, check, DURATION_TEXT, Some(schema))
    }

    /// A positive duration whose default may exceed u64 (a multiple of another key).
    pub(crate) fn duration_wide(&self, name: &str, default: u128) -> Res<u128> {
        let check = |v: &Raw| match parse_duration(v).map_err(Bad)? {
            0 => Err(Bad("must be > 0, e.g. \"10s\"".into())),
            ns => Ok(ns as u128),
        };
        let d = if default > u64::MAX as u128 { json!(default as f64) } else { json!(default as u64) };
        let schema = quantity_schema(&["ns", "us", "ms", "s"]);
        Ok(self.get(name, Some(Some(default)), Default::Is(d), check, DURATION_TEXT, Some(schema))?.unwrap_or(default))
    }

    /// A rate in bit/s, not zero; `default` None: required.
    pub(crate) fn rate(&self, name: &str, default: Option<u64>) -> Res<u64> {
        let check = |v: &Raw| {
            let bps = parse_rate(v).map_err(Bad)?;
            if bps == 0 {
                return Err(Bad("must be > 0, e.g. \"100Mbps\"".into()));
            }
            Ok(bps)
        };
        let dj = default.map_or(Default::Required, |d| Default::Is(json!(d)));
        let schema = quantity_schema(&["bps", "kbps", "Mbps", "Gbps"]);
        Ok(self.get(name, default.map(Some), dj, check, RATE_TEXT, Some(schema))?.unwrap_or_default())
    }

    /// An optional rate in bit/s, not zero (null when absent).
    pub(crate) fn rate_opt(&self, name: &str) -> Res<Option<u64>> {
        let check = |v: &Raw| match parse_rate(v).map_err(Bad)? {
            0 => Err(Bad("must be > 0, e.g. \"10Gbps\"".into())),
            bps => Ok(bps),
        };
        let schema = quantity_schema(&["bps", "kbps", "Mbps", "Gbps"]);
        self.get(name, Some(None), Default::Null, check, RATE_TEXT, Some(schema))
    }

    /// A key read by a hand-written `check` (no schema type).
    pub(crate) fn custom<T>(
        &self,
        name: &str,
        check: impl FnOnce(&Raw) -> Result<T, String>,
        allowed: &str,
    ) -> Res<Option<T>> {
        self.get(name, Some(None), Default::Null, |v| check(v).map_err(Bad), allowed, None)
    }
}

fn quantity_schema(units: &[&str]) -> Value {
    json!({"type": "string", "pattern": format!("^\\s*(\\d+(\\.\\d*)?|\\.\\d+)\\s*({})\\s*$", units.join("|"))})
}

pub(crate) fn range_text(what: &str, lo: Option<i128>, hi: Option<i128>) -> String {
    match (lo, hi) {
        (Some(l), Some(h)) => format!("{what} in {l}..={h}"),
        (Some(l), None) => format!("{what} >= {l}"),
        (None, Some(h)) => format!("{what} <= {h}"),
        (None, None) => what.to_owned(),
    }
}

/// Parse TOML text into a [`Raw`] document: the standalone tools' reader, and `lasthop run`'s
/// (`_native.normalize_text`; Python reads with `tomllib` where this refuses a text, for its
/// messages, and for a sweep's documents). Errors are one line with the position.
pub fn parse_toml(text: &str) -> Result<Raw, String> {
    let v: toml::Value = toml::from_str(text).map_err(|e| toml_error_line(text, &e))?;
    Ok(from_toml(&v))
}

/// The reader's message on one line ("invalid table header; expected `.`, `]`") with where it
/// stopped, as Python's `tomllib` says it: "(at line 2, column 5)", both from 1.
fn toml_error_line(text: &str, e: &toml::de::Error) -> String {
    let msg: Vec<&str> = e.message().lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let mut out = msg.join("; ");
    if let Some(span) = e.span() {
        let mut at = span.start.min(text.len());
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let before = &text[..at];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        out += &format!(" (at line {line}, column {column})");
    }
    out
}

fn from_toml(v: &toml::Value) -> Raw {
    match v {
        toml::Value::String(s) => Raw::Str(s.clone()),
        toml::Value::Integer(i) => Raw::Int(*i as i128),
        toml::Value::Float(f) => Raw::Float(*f),
        toml::Value::Boolean(b) => Raw::Bool(*b),
        toml::Value::Datetime(d) => Raw::Other(d.to_string()),
        toml::Value::Array(a) => Raw::List(a.iter().map(from_toml).collect()),
        toml::Value::Table(t) => Raw::Table(t.iter().map(|(k, v)| (k.clone(), from_toml(v))).collect()),
    }
}

#[cfg(test)]
mod tests;
