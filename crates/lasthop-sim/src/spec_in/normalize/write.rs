//! The normalized spec's canonical JSON (`canonical.rs`), written from the typed [`Spec`]: the
//! top-level keys in order, each section serialized; stations and flows written once per
//! `[[stations]]` / `[[flows]]` table and repeated, so that a cell of thousands of stations
//! costs one table or a few.

use crate::canonical::{to_canonical, to_string};
use crate::spec::{FlowSpec, Spec};

/// The canonical JSON of `spec`, whose station `i` came from table `station_group[i]` and flow
/// `j` from table `flow_table[j]` (stations of one table are alike; flows of one table differ
/// only in their station).
pub fn spec_json(spec: &Spec, station_group: &[usize], flow_table: &[usize]) -> String {
    fn to<T: serde::Serialize + ?Sized>(v: &T) -> String {
        to_canonical(v).expect("a spec section serializes")
    }
    let mut parts: Vec<(&str, String)> = vec![
        ("name", to(&spec.name)),
        ("description", to(&spec.description)),
        ("sim", to(&spec.sim)),
        ("phy", to(&spec.phy)),
        ("mac", to(&spec.mac)),
        ("ap", to(&spec.ap)),
        ("wired", to(&spec.wired)),
        ("channel", to(&spec.channel)),
        ("stations", stations_text(spec, station_group)),
        ("flows", flows_text(&spec.flows, flow_table)),
        ("aggctl", to(&spec.aggctl)),
    ];
    if let Some(v) = &spec.vwire {
        parts.push(("vwire", to(v)));
    }
    if let Some(e) = &spec.emu {
        parts.push(("emu", to(e)));
    }
    parts.sort_by(|a, b| a.0.cmp(b.0));
    let mut out = String::with_capacity(parts.iter().map(|p| p.1.len() + p.0.len() + 4).sum::<usize>() + 2);
    out.push('{');
    for (i, (k, v)) in parts.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('"');
        out.push_str(k);
        out.push_str("\":");
        out.push_str(v);
    }
    out.push('}');
    out
}

fn stations_text(spec: &Spec, group: &[usize]) -> String {
    // The text of the group being written: a group's stations are alike.
    let mut text: Option<(usize, String)> = None;
    let mut out = String::from("[");
    for (i, st) in spec.stations.iter().enumerate() {
        let g = group.get(i).copied().unwrap_or(usize::MAX - i);
        if text.as_ref().is_none_or(|t| t.0 != g) {
            text = Some((g, to_canonical(st).expect("a station serializes")));
        }
        if i > 0 {
            out.push(',');
        }
        out.push_str(&text.as_ref().expect("this station's text").1);
    }
    out.push(']');
    out
}

fn flows_text(flows: &[FlowSpec], table: &[usize]) -> String {
    // Each table's flow is written once with a station no spec has, then cut there.
    const MARK: &str = "\"station\":4294967295";
    let mut out = String::from("[");
    let mut cut: Option<(usize, String, String)> = None;
    for (j, f) in flows.iter().enumerate() {
        let t = table.get(j).copied().unwrap_or(usize::MAX - j);
        if cut.as_ref().is_none_or(|c| c.0 != t) {
            let mut v = f.to_value();
            v["station"] = serde_json::json!(u32::MAX);
            let text = to_string(&v);
            let (head, tail) = text.split_once(MARK).expect("the station mark");
            cut = Some((t, head.to_owned(), tail.to_owned()));
        }
        let (_, head, tail) = cut.as_ref().expect("this table's text");
        if j > 0 {
            out.push(',');
        }
        out.push_str(head);
        out.push_str("\"station\":");
        out.push_str(itoa::Buffer::new().format(f.station));
        out.push_str(tail);
    }
    out.push(']');
    out
}
