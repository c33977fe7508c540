//! The `[[flows]]` tables: each table's pattern, transport (TCP, QUIC) and split-proxy keys
//! checked and read into one `FlowSpec`, and the stations it goes to.

use super::*;

fn stations_selector(t: &Table, n_sta: usize) -> Res<Vec<usize>> {
    let allowed = format!("\"all\", a station index in 0..={}, or a list of distinct indices", n_sta as i128 - 1);
    let v = match t.raw("stations") {
        None => return Ok((0..n_sta).collect()),
        Some(Raw::Str(s)) if s == "all" => return Ok((0..n_sta).collect()),
        Some(v) => v,
    };
    let items: Vec<&Raw> = match v {
        Raw::Int(_) | Raw::BigInt { .. } => vec![v],
        Raw::List(l) if !l.is_empty() => l.iter().collect(),
        _ => return Err(t.fail("stations", allowed)),
    };
    let mut out = Vec::with_capacity(items.len());
    for x in items {
        match x {
            Raw::Int(i) if *i >= 0 && *i < n_sta as i128 => out.push(*i as usize),
            _ => return Err(t.fail("stations", allowed)),
        }
    }
    let mut seen = out.clone();
    seen.sort_unstable();
    seen.dedup();
    if seen.len() != out.len() {
        return Err(t.fail("stations", allowed));
    }
    Ok(out)
}

/// The normalized flow tables and the first count beyond u64 (path, value) if any.
pub(super) type Flows = (Vec<FlowTable>, Option<(String, String)>);

pub(super) fn flows_section(top: &Table, cell: &Cell, stations: &Stations) -> Res<Flows> {
    let list = tables(top, "flows", "an array of tables [[flows]]")?.unwrap_or(&[]);
    let mut flows = Vec::new();
    let mut overflow: Option<(String, String)> = None;
    for (fi, f) in list.iter().enumerate() {
        let t = Table::new(Some(f), &format!("flows[{fi}]"), "flows", "a table [[flows]]")?;
        let (sel, f, big) = flow(&t, cell, stations.len())?;
        if overflow.is_none() && !sel.is_empty() {
            overflow = big.map(|(k, text)| (format!("flows[{fi}].{k}"), text));
        }
        flows.push(FlowTable { f, sel });
    }
    Ok((flows, overflow))
}

const TCP_KEYS: [&str; 13] = [
    "cc", "bytes", "pacing", "hystart", "extra_acked", "app", "request_bytes", "response_bytes", "think_time", "requests",
    "ecn", "send_buffer", "tso",
];
const QUIC_KEYS: [&str; 13] = [
    "profile", "ack_policy", "zero_rtt", "initial_cwnd", "page", "connections", "idle", "idle_timeout", "reconnect",
    "history", "history_guard", "history_events", "pacer",
];

/// One `[[flows]]` table: the stations it goes to, the normalized flow (without its station)
/// and its first count beyond u64 (key, value as written).
#[allow(clippy::type_complexity)]
fn flow(t: &Table, cell: &Cell, n_sta: usize) -> Res<(Vec<usize>, FlowSpec, Option<(&'static str, String)>)> {
    let direction = t.pick("direction", Direction::Down, "")?;
    let cross = direction == Direction::Cross;
    let sel = if cross {
        // Cross traffic on the wired path: consumed at the AP, no station involved.
        if t.has("stations") {
            return Err(t.fail("stations", "not used with direction = \"cross\""));
        }
        vec![0]
    } else {
        stations_selector(t, n_sta)?
    };
    let p = t.choice("pattern", "cbr", Pattern::spec_names(), "")?;
    let p = Pattern::from_name(&p).expect("a listed pattern");
    if cross && !matches!(p, Pattern::Cbr | Pattern::Poisson) {
        return Err(t.fail("pattern", "\"cbr\" or \"poisson\" for direction = \"cross\""));
    }
    if t.has("interval") && p != Pattern::Ping {
        return Err(t.fail("interval", "only for pattern = \"ping\""));
    }
    if p == Pattern::Quic && direction != Direction::Down {
        return Err(t.fail("direction", "\"down\" for pattern = \"quic\" (a download from the server)"));
    }
    if p == Pattern::Aggctl && direction != Direction::Down {
        return Err(t.fail("direction", "\"down\" for pattern = \"aggctl\" (a paced download from the server)"));
    }
    let mut rate = if !matches!(p, Pattern::Cbr | Pattern::Poisson) {
        if t.has("rate") {
            let extra = if p == Pattern::Ping { " (a ping sets its interval)" } else { "" };
            return Err(t.fail("rate", format!("only for pattern = \"cbr\" or \"poisson\"{extra}")));
        }
        0 // not used by saturated/TCP flows; the normalized spec keeps every key
    } else {
        t.rate("rate", None)?
    };
    if p != Pattern::Tcp {
        for k in TCP_KEYS {
            let both = matches!(k, "bytes" | "pacing" | "ecn" | "cc");
            if t.has(k) && !(p == Pattern::Quic && both) {
                let extra = if both { " or \"quic\"" } else { "" };
                return Err(t.fail(k, format!("only for pattern = \"tcp\"{extra}")));
            }
        }
    }
    if p != Pattern::Quic {
        if let Some(k) = QUIC_KEYS.iter().find(|k| t.has(k)) {
            return Err(t.fail(k, "only for pattern = \"quic\""));
        }
    }
    let tcp = p == Pattern::Tcp;
    let mut v = blank_flow(direction, p);
    let (app, big) = transport_keys(t, p, &mut v)?;
    let size_default = match p {
        Pattern::Ping => 84,
        Pattern::Quic => 1378,
        _ => 1500,
    };
    let size_min = match p {
        Pattern::Tcp => 120,
        Pattern::Quic => 1228,
        _ => 20,
    };
    let size = t.int("packet_size", size_default, Some(size_min), Some(ranges::MAX_PACKET_SIZE as i128))?;
    if p == Pattern::Ping {
        // Echo requests every `interval` (a CBR schedule at size / interval).
        let interval = t.duration("interval", Some(100_000_000), true)?;
        rate = (py_round_u128(size as u128 * 8 * 1_000_000_000, interval as u128)).max(1);
    }
    split_keys(t, &mut v, tcp.then_some(direction), app)?;
    // WMM access category of the flow's packets (both directions); default
    // mac.access_category. Only in the normalized spec when given.
    if cross && t.has("ac") {
        return Err(t.fail("ac", "not used with direction = \"cross\" (cross traffic never enters the cell)"));
    }
    let flow_ac = t.choice_opt("ac", Some(None), &access_categories(), "")?;
    let start = t.duration("start", Some(0), false)?;
    let stop = t.duration("stop", Some(cell.duration), false)?;
    if stop > cell.duration {
        return Err(t.fail("stop", "must be <= sim.duration"));
    }
    if start >= stop {
        return Err(t.fail("start", format!("must be < stop ({})", ms(stop))));
    }
    v.rate_bps = rate;
    v.packet_size = size as u32;
    v.start_ns = start;
    v.stop_ns = stop;
    // Only in the normalized spec when given (`FlowSpec::ac`); the split proxy's keys only for
    // a TCP flow (`FlowSpec::TCP_ONLY`).
    v.ac = flow_ac.map(|ac| AccessCategory::parse(&ac).expect("a listed access category"));
    Ok((sel, v, big))
}

/// A flow of `direction` and `pattern` whose other keys the readers below fill in (the station
/// is set per station the table goes to).
fn blank_flow(direction: Direction, pattern: Pattern) -> FlowSpec {
    FlowSpec {
        station: 0,
        direction,
        pattern,
        rate_bps: 0,
        packet_size: 0,
        start_ns: 0,
        stop_ns: 0,
        cc: Cc::Cubic,
        ecn: EcnMode::Off,
        bytes: 0,
        pacing: None,
        hystart: String::new(),
        extra_acked: true,
        app: App::Bulk,
        request_bytes: 0,
        response_bytes: 0,
        think_time_ns: 0,
        requests: 0,
        profile: Profile::Quic,
        ack_policy: None,
        zero_rtt: false,
        initial_cwnd: 10,
        objects: Vec::new(),
        connections: 1,
        idle_ns: 0,
        idle_timeout_ns: 0,
        reconnect: Reconnect::OneRtt,
        history: History::Off,
        history_guard: HistoryGuard::Off,
        history_events: HistoryEvents::Close0Rtt,
        split: false,
        split_wired_cc: Cc::Bbr,
        app_rate_bps: 0,
        send_buffer: crate::spec::SEND_BUFFERS[0].into(),
        tso: crate::spec::TSOS[0].into(),
        pacer: crate::spec::PACERS[0].into(),
        app_class: None,
        utility: None,
        ac: None,
    }
}

/// The TCP and QUIC keys of a flow of pattern `p` into `v`: (app, the first count beyond u64).
fn transport_keys(t: &Table, p: Pattern, v: &mut FlowSpec) -> Res<(App, Option<(&'static str, String)>)> {
    let quic = p == Pattern::Quic;
    let tcp = p == Pattern::Tcp;
    v.profile = if quic { t.pick("profile", Profile::Quic, "")? } else { Profile::Quic };
    v.ack_policy = if quic { t.choice_opt("ack_policy", Some(None), &ACK_POLICIES, "")? } else { None };
    v.zero_rtt = quic && t.bool("zero_rtt", false)?;
    v.initial_cwnd = if quic { t.int("initial_cwnd", 10, Some(1), Some(10_000))? as u32 } else { 10 };
    let page_names: Vec<&str> = pages::TABLE_II.iter().map(|p| p.0).collect();
    let page = if quic { t.choice_opt("page", Some(None), &page_names, "")? } else { None };
    if page.is_some() && t.has("bytes") {
        return Err(t.fail("bytes", "not with page (the page sets the object sizes)"));
    }
    let objects: Vec<u64> = page.as_deref().and_then(pages::objects).unwrap_or_default().into_iter().map(|o| o.1).collect();
    let ccs: &[Cc] = if quic { &crate::spec::QUIC_CONGESTION_CONTROLS } else { Cc::ALL };
    let cc_names: Vec<&str> = ccs.iter().map(|c| c.as_str()).collect();
    let cc = if tcp || quic { t.choice("cc", "cubic", &cc_names, "")? } else { "cubic".into() };
    let cc = Cc::from_name(&cc).expect("a listed controller");
    let ecn = if tcp || quic { t.choice("ecn", "off", &names::ecn_names(), "")? } else { "off".into() };
    let ecn = lasthop_algo::ecn::EcnMode::from_name(&ecn).expect("a listed mode");
    if let Some(why) = crate::spec::ecn_mismatch_in(cc, ecn, ccs) {
        return Err(t.fail("ecn", why));
    }
    let mut big: Option<(&'static str, String)> = None;
    let mut count = |t: &Table, key: &'static str, default: Option<i128>, lo: i128| -> Res<u64> {
        let n = t.int_opt(key, default.map(Some), Some(lo), None, None)?.unwrap_or_default();
        if n > U64_MAX && big.as_ref().is_none_or(|b| key < b.0) {
            let text = match t.value(key) {
                Some(Raw::BigInt { text, .. }) => text.clone(),
                _ => n.to_string(),
            };
            big = Some((key, text));
        }
        Ok(n.min(U64_MAX) as u64)
    };
    let nbytes = if tcp || quic { count(t, "bytes", Some(0), 0)? } else { 0 };
    // Connection lifecycles and the history-based initial window (world/hosts/quic.rs).
    let connections = if quic { t.int("connections", 1, Some(1), Some(10_000))? } else { 1 };
    if connections > 1 && nbytes == 0 && objects.is_empty() {
        return Err(t.fail(
            "connections",
            "1 for an endless download (bytes = 0); later connections need a finite transfer (bytes or page)",
        ));
    }
    v.idle_ns = if quic { t.duration("idle", Some(0), false)? } else { 0 };
    let idle_timeout = 30_000_000_000;
    v.idle_timeout_ns = if quic { t.duration("idle_timeout", Some(idle_timeout), true)? } else { idle_timeout };
    v.reconnect = if quic { t.pick("reconnect", Reconnect::OneRtt, "")? } else { Reconnect::OneRtt };
    let history = if quic { t.pick("history", History::Off, "")? } else { History::Off };
    let guard = if quic { t.pick("history_guard", HistoryGuard::Off, "")? } else { HistoryGuard::Off };
    if guard != HistoryGuard::Off && history == History::Off {
        return Err(t.fail("history_guard", "\"none\" unless history is \"mean\" or \"ewma\""));
    }
    let events = if quic { t.pick("history_events", HistoryEvents::Close0Rtt, "")? } else { HistoryEvents::Close0Rtt };
    v.pacing = if tcp || quic { t.bool_opt("pacing", None)? } else { None };
    let pacers = &crate::spec::PACERS;
    v.pacer = if quic { t.choice("pacer", pacers[0], pacers, "")? } else { pacers[0].into() };
    if v.pacer != pacers[0] && !v.pacing.unwrap_or(v.profile == Profile::Quic) {
        return Err(t.fail("pacer", "only for a flow that paces (profile = \"quic\", or pacing = true)"));
    }
    let hystarts = &crate::spec::HYSTARTS;
    v.hystart = if tcp { t.choice_or_bool("hystart", hystarts, hystarts[0], "off")? } else { hystarts[0].into() };
    v.extra_acked = !tcp || t.bool("extra_acked", true)?;
    let app = if tcp { t.pick("app", App::Bulk, "")? } else { App::Bulk };
    let rr = app == App::RequestResponse;
    if !rr {
        if let Some(k) = ["request_bytes", "response_bytes", "think_time", "requests"].iter().find(|k| t.has(k)) {
            return Err(t.fail(k, "only with app = \"request_response\""));
        }
    } else if t.has("bytes") {
        return Err(t.fail(
            "bytes",
            "only with app = \"bulk\" (request/response sizes are request_bytes and response_bytes)",
        ));
    }
    v.request_bytes = if rr { count(t, "request_bytes", Some(300), 1)? } else { 0 };
    v.response_bytes = if rr { count(t, "response_bytes", None, 1)? } else { 0 };
    v.think_time_ns = if rr { t.duration("think_time", Some(0), false)? } else { 0 };
    v.requests = if rr { count(t, "requests", Some(0), 0)? } else { 0 };
    if tcp && cc != Cc::Cubic && t.has("hystart") {
        return Err(t.fail("hystart", "only with cc = \"cubic\""));
    }
    if tcp && cc != Cc::Bbr && t.has("extra_acked") {
        return Err(t.fail("extra_acked", "only with cc = \"bbr\""));
    }
    v.cc = cc;
    v.ecn = ecn;
    v.bytes = nbytes;
    v.app = app;
    v.objects = objects;
    v.connections = connections as u32;
    v.history = history;
    v.history_guard = guard;
    v.history_events = events;
    Ok((app, big))
}

/// `a / b` rounded half to even, on the double quotient (how the normalized spec has always
/// computed a ping's rate; `a` < 2^53 here, so only the division rounds).
fn py_round_u128(a: u128, b: u128) -> u64 {
    py_round(a as f64 / b as f64)
}

/// The split proxy and Virtual Wires keys of a flow (world/hosts/vwire.rs); `tcp`: a TCP flow's
/// direction.
fn split_keys(t: &Table, v: &mut FlowSpec, tcp: Option<Direction>, app: App) -> Res<()> {
    let split = t.bool("split", false)?;
    if split && t.has("ecn") {
        return Err(t.fail("ecn", "not with split = true (the split proxy's connections carry no ECN)"));
    }
    if split && !matches!(tcp, Some(Direction::Down | Direction::Up)) {
        return Err(t.fail("split", "only for pattern = \"tcp\" with direction = \"down\" or \"up\""));
    }
    if split && app != App::Bulk {
        return Err(t.fail("split", "only with app = \"bulk\""));
    }
    if let Some(k) = ["split_wired_cc", "app_class", "utility"].iter().find(|k| t.has(k) && !split) {
        return Err(t.fail(k, "only with split = true"));
    }
    if let Some(k) = ["app_class", "utility"].iter().find(|k| t.has(k) && tcp == Some(Direction::Up)) {
        return Err(t.fail(k, "only for downloads (Virtual Wires allocates the downlink's airtime)"));
    }
    let wired_cc = if split { t.pick("split_wired_cc", Cc::Bbr, "")? } else { Cc::Bbr };
    let app_class = if split { t.choice_opt("app_class", Some(None), &APP_CLASSES, "")? } else { None };
    let utility = if split { t.custom("utility", parse_utility, UTILITY_TEXT)? } else { None };
    let pattern_tcp = v.pattern == Pattern::Tcp;
    if t.has("app_rate") && !(pattern_tcp && app == App::Bulk) {
        return Err(t.fail("app_rate", "only for pattern = \"tcp\" with app = \"bulk\""));
    }
    if t.has("app_rate") && t.has("bytes") {
        return Err(t.fail("app_rate", "not with bytes (a paced application writes until the flow stops)"));
    }
    let app_rate = if t.has("app_rate") { t.rate("app_rate", Some(0))? } else { 0 };
    let buffers = &crate::spec::SEND_BUFFERS;
    let send_buffer = if pattern_tcp { t.choice("send_buffer", buffers[0], buffers, "")? } else { buffers[0].into() };
    if send_buffer != buffers[0] {
        let why = if app != App::Bulk {
            Some("only with app = \"bulk\" (a request/response server writes whole responses)")
        } else if app_rate > 0 {
            Some("not with app_rate (a paced application writes on its own clock)")
        } else if split {
            Some("not with split = true (the proxy's sockets have their own buffers, vwire.sndbuf)")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(t.fail("send_buffer", why));
        }
    }
    let tsos = &crate::spec::TSOS;
    let tso = if pattern_tcp { t.choice("tso", tsos[0], tsos, "")? } else { tsos[0].into() };
    if tso != tsos[0] && split {
        return Err(t.fail("tso", "not with split = true (the proxy's connections send as the model's TCP does)"));
    }
    if tso != tsos[0] && matches!(v.cc, Cc::Bbr | Cc::Prague) {
        return Err(t.fail("tso", "with cc = \"newreno\", \"cubic\" or \"dctcp\" (Linux 3.17 had no BBR or Prague)"));
    }
    v.tso = tso;
    v.split = split;
    v.split_wired_cc = wired_cc;
    v.app_rate_bps = app_rate;
    v.send_buffer = send_buffer;
    v.app_class = app_class;
    v.utility = utility;
    Ok(())
}

/// A vwire utility from its text form: {"step": [[bps, u], ...]} or {"log": w}.
fn parse_utility(v: &Raw) -> Result<UtilitySpec, String> {
    let bad = || UTILITY_TEXT.to_owned();
    let Raw::Str(s) = v else { return Err(bad()) };
    let Some((kind, rest)) = s.split_once(':') else { return Err(bad()) };
    match kind {
        "log" => {
            let w = py_float(rest).ok_or_else(bad)?;
            if w.is_finite() && w > 0.0 {
                return Ok(UtilitySpec::Log(w));
            }
        }
        "step" => {
            let mut steps: Vec<(f64, f64)> = Vec::new();
            for part in rest.split(',') {
                let (r, u) = part.split_once(':').unwrap_or((part, ""));
                let bps = parse_rate(&Raw::Str(py_strip(r).to_owned())).map_err(|_| bad())?;
                let util = py_float(u).ok_or_else(bad)?;
                if bps == 0 || !(util.is_finite() && util >= 0.0) {
                    return Err(bad());
                }
                if let Some(&(pb, pu)) = steps.last() {
                    if (bps as f64) <= pb || util < pu {
                        return Err(bad());
                    }
                }
                steps.push((bps as f64, util));
            }
            return Ok(UtilitySpec::Step(steps));
        }
        _ => {}
    }
    Err(bad())
}

/// Python's str.strip() (Unicode whitespace).
fn py_strip(s: &str) -> &str {
    s.trim_matches(crate::spec_in::raw::py_space)
}

/// Python's `float(text)`: optional whitespace, sign, digits with `_` between them, a point,
/// an exponent, or inf/infinity/nan in any case.
fn py_float(text: &str) -> Option<f64> {
    let s = py_strip(text);
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let lower = body.to_ascii_lowercase();
    if matches!(lower.as_str(), "inf" | "infinity" | "nan") {
        // Rust reads these words as Python does: any case, an optional sign.
        return s.parse::<f64>().ok();
    }
    // Underscores only between digits.
    let b = body.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'_' && !(i > 0 && b[i - 1].is_ascii_digit() && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            return None;
        }
    }
    if !body.bytes().all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-' | b'_')) {
        return None;
    }
    s.replace('_', "").parse::<f64>().ok()
}
