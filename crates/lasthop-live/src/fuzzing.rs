//! The bodies of the fuzz targets: each function takes one input of untrusted bytes, feeds it to
//! the parsers (and, for specs and injected packets, to the simulator) and panics on a broken
//! invariant. Two callers: the cargo-fuzz targets in `fuzz/fuzz_targets` (nightly, libFuzzer,
//! one line each) and the stable integration test `tests/fuzz_corpus.rs`, which replays every
//! kept input of `fuzz/corpus/<target>` and `fuzz/regressions/<target>` in `cargo test`.
//!
//! Nothing here depends on a fuzzing library; every input is bounded so one call stays short.

use lasthop_algo::control::aggctl::AggReport;
use lasthop_algo::control::vwire::Forest;
use lasthop_core::Instant;
use lasthop_sim::world::{Dir, ExtEvent, ExtFate, ExtLeg, World};
use lasthop_sim::Spec;
use std::collections::BTreeMap;

use crate::nl::{nl80211, parse_msgs, rtnl};
use crate::tools::aggctl::wire::{parse_key, DataHdr, Reject, ReportPkt, REPORT_MAGIC, REPORT_PKT_LEN, TAG_LEN, VERSION};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use crate::tools::args::{parse_duration, parse_rate};
use crate::tools::vwire::policy::{parse_utility, Policy};

/// One target's body: one input, a panic on a broken invariant.
pub type Target = fn(&[u8]);

/// The targets, by the name of their fuzz target and corpus directory.
pub const TARGETS: &[(&str, Target)] = &[
    ("spec_run", spec_run),
    ("aggctl_wire", aggctl_wire),
    ("netlink", netlink),
    ("vwire_text", vwire_text),
    ("emu_inject", emu_inject),
    ("spec_toml", spec_toml),
];

/// The longest simulated time one `spec_run` input may run.
pub const SPEC_RUN_MAX_SIM_NS: u64 = 20_000_000;

/// Spec JSON (what a user's spec file becomes after normalization, and what the native module
/// accepts from any caller) → `Spec::from_json` → validation (`json_problems`) → world construction
/// and a short run, twice: the same spec and seed must give the same results. Each input is
/// bounded: simulated time is cut to at most 20 ms and inputs with many stations or flows stop
/// after validation, so one input cannot run long.
pub fn spec_run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // The entry point the Python module calls for validation.
    let _ = lasthop_sim::validate_json(text);
    let Ok(mut spec) = Spec::from_json(text) else { return };
    if !spec.json_problems().is_empty() {
        return;
    }
    if spec.stations.len() > 8 || spec.flows.len() > 8 {
        return;
    }
    // Bound the run: cut the duration and keep every time inside it.
    let d = spec.sim.duration_ns.min(SPEC_RUN_MAX_SIM_NS);
    if d < spec.sim.duration_ns {
        spec.sim.duration_ns = d;
        spec.sim.warmup_ns = spec.sim.warmup_ns.min(d / 2);
        spec.sim.bin_ns = spec.sim.bin_ns.clamp(1, d);
        for f in &mut spec.flows {
            f.stop_ns = f.stop_ns.min(d);
            f.start_ns = f.start_ns.min(d.saturating_sub(1)).min(f.stop_ns.saturating_sub(1));
        }
        // Cutting may make other keys inconsistent (e.g. a time beyond the new end): such an
        // input is judged by validation again, as a user's spec would be.
        if !spec.json_problems().is_empty() {
            return;
        }
    }
    let seed = spec.sim.seed;
    let a = lasthop_sim::run(spec.clone(), seed, &mut |_| {});
    let b = lasthop_sim::run(spec, seed, &mut |_| {});
    let (a, b) = (serde_json::to_string(&a), serde_json::to_string(&b));
    assert!(a.is_ok(), "results do not serialize: {a:?}");
    assert!(a.ok() == b.ok(), "same spec and seed, different results");
}

/// A spec file as users and the live tools' `--spec` hand it over: TOML text → `parse_toml` →
/// `normalize_all` (every problem listed) → the simulator's types and rules. Every problem is
/// one line naming a key; `normalize_all`'s first problem is `normalize`'s; reading is
/// deterministic; what the validator accepts, the simulator reads (`Spec::from_json`) with
/// every key in its range (`Spec::key_problems`) — a normalized spec it cannot read, or one
/// with a key out of range, is the validator's bug.
pub fn spec_toml(data: &[u8]) {
    use lasthop_sim::spec_in;
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(doc) = spec_in::parse_toml(text) else { return };
    let all = spec_in::normalize_all(&doc, "fuzz");
    assert_eq!(all, spec_in::normalize_all(&doc, "fuzz"), "same document, different reading");
    match (&all, spec_in::normalize(&doc, "fuzz")) {
        (Ok(a), Ok(b)) => assert_eq!(a, &b),
        (Err(es), Err(e)) => {
            assert_eq!(es[0], e, "the listing's first problem is not normalize's");
            assert!(es.len() <= spec_in::MAX_ERRORS);
            for e in es {
                let line = e.to_string();
                assert!(!line.contains('\n') && !e.path.is_empty() && !e.allowed.is_empty(), "{line:?}");
            }
        }
        (a, b) => panic!("normalize_all {a:?} but normalize {b:?}"),
    }
    if let Ok(n) = all {
        let spec = Spec::from_json(&n.json).unwrap_or_else(|e| panic!("the simulator cannot read a normalized spec: {e}"));
        // What the simulator reads back is what the reader built: it writes the same JSON.
        let back = spec_in::normalize::spec_json(&spec, &n.station_group, &n.flow_table);
        assert_eq!(back, n.json, "the normalized spec does not read back to itself");
        assert_eq!(spec.key_problems(), Vec::<lasthop_sim::SpecProblem>::new(), "the reader let a key out of range");
        let _ = spec.problems();
        assert_eq!(n.station_group.len(), spec.stations.len());
        assert_eq!(n.flow_table.len(), spec.flows.len());
    }
}

const AGGCTL_KEY: &[u8] = b"lasthop-fuzz-key-0123456789abcdef";

/// aggctl's datagrams, as the live sender and receiver read them from the network: the data
/// packet header (`DataHdr::read`), the authenticated feedback report (`ReportPkt::decode`,
/// with a fixed key) and the bare aggregation report inside it (`AggReport::decode`), plus the
/// key syntax. Whatever is accepted must re-encode to the same bytes; the input is also wrapped
/// as the body of a correctly tagged report packet, which must decode (or be refused as
/// malformed, never as forged) and re-encode, and with one tag bit flipped be refused as forged.
pub fn aggctl_wire(data: &[u8]) {
    if let Some(h) = DataHdr::read(data) {
        let mut b = vec![0u8; data.len()];
        h.write(&mut b);
        assert_eq!(DataHdr::read(&b).map(|x| format!("{x:?}")), Some(format!("{h:?}")));
    }
    if let Ok(r) = AggReport::decode(data) {
        assert_eq!(&r.encode()[..], data, "a report that does not re-encode to its bytes");
    }
    if let Ok(p) = ReportPkt::decode(data, AGGCTL_KEY) {
        assert_eq!(&p.encode(AGGCTL_KEY)[..], data, "a report packet that does not re-encode to its bytes");
    }
    // Authenticated report packets: the input as the body behind a valid header, with a valid
    // tag, so that the fields behind the HMAC check are reached (random bytes never pass it).
    let body = REPORT_PKT_LEN - TAG_LEN;
    let mut pkt = [0u8; REPORT_PKT_LEN];
    pkt[..2].copy_from_slice(&REPORT_MAGIC);
    pkt[2] = VERSION;
    let n = data.len().min(body - 4);
    pkt[4..4 + n].copy_from_slice(&data[..n]);
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(AGGCTL_KEY).expect("HMAC takes any key length");
    m.update(&pkt[..body]);
    let tag = m.finalize().into_bytes();
    pkt[body..].copy_from_slice(&tag[..TAG_LEN]);
    match ReportPkt::decode(&pkt, AGGCTL_KEY) {
        Ok(p) => assert_eq!(p.encode(AGGCTL_KEY), pkt, "an authenticated report that does not re-encode to its bytes"),
        Err(e) => assert_eq!(e, Reject::Malformed, "a correctly tagged packet refused as {e:?}"),
    }
    // A flipped tag bit is refused as forged.
    let mut forged = pkt;
    forged[REPORT_PKT_LEN - 1] ^= 1 << (data.first().copied().unwrap_or(0) % 8);
    assert_eq!(ReportPkt::decode(&forged, AGGCTL_KEY), Err(Reject::Forged), "a forged tag accepted");
    if data.len() >= 4 {
        let _ = parse_key(&String::from_utf8_lossy(data));
    }
}

/// Netlink datagrams: what the live tools read from the kernel (rtnetlink links, neighbours,
/// qdiscs; nl80211 stations, surveys, interfaces, aggregation) and what the emulator's nl80211
/// server reads from its clients (`Request::parse`). Every message of a datagram goes through
/// every decoder; none may panic.
pub fn netlink(data: &[u8]) {
    let Ok(msgs) = parse_msgs(data) else { return };
    for m in &msgs {
        let _ = rtnl::Link::decode(m);
        let _ = rtnl::Neighbour::decode(m);
        let _ = rtnl::Qdisc::decode(m);
        let _ = nl80211::StationInfo::decode(m);
        let _ = nl80211::SurveyInfo::decode(m);
        let _ = nl80211::InterfaceInfo::decode(m);
        let _ = nl80211::Aggregation::decode(m);
        let _ = nl80211::Request::parse(m);
    }
}

/// Text the Virtual Wires tools read from files: the live proxy's flow policy (TOML,
/// `Policy::parse`), the random-forest classifier model (`Forest::parse`) and utility strings;
/// plus the duration and rate syntax of the tools' command lines.
pub fn vwire_text(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = Policy::parse(text);
    if let Ok(f) = Forest::parse(text) {
        let x = vec![0.25f32; f.n_features()];
        assert!(f.predict(&x) < f.classes().len());
    }
    let _ = parse_utility(text);
    let _ = parse_duration(text);
    let _ = parse_rate(text);
}

/// The cell `emu_inject` drives: four VHT stations, as `lasthop emu` builds it.
pub const EMU_INJECT_SPEC: &str = include_str!("fuzzing-emu-vht-4sta.json");

/// Packets entering the emulator: the real-time world (`World::new_realtime`, as the emulator
/// builds it) of a four-station VHT cell, driven by a host that adds external flows on every
/// leg, injects packets of the sizes the emulator reads from its TUN devices (an IP packet:
/// 20 to 65535 octets) and steps time. The input is read six bytes per operation (at most
/// 400). Every injected packet must meet exactly one fate (delivered, dropped, or received
/// ahead of its exchange's end and then released once), never before it was injected, and the
/// world must not panic.
pub fn emu_inject(data: &[u8]) {
    let spec = Spec::from_json(EMU_INJECT_SPEC).expect("the built-in spec parses");
    let n_sta = spec.stations.len() as u32;
    let mut w = World::new_realtime(spec, 1);
    let mut flows: Vec<u32> = Vec::new();
    let mut injected: BTreeMap<u32, Instant> = BTreeMap::new();
    let mut fated: BTreeMap<u32, ExtEvent> = BTreeMap::new();
    let mut out = Vec::new();
    let mut now = w.now();
    let mut tag = 0u32;
    let mut received: BTreeMap<u32, Instant> = BTreeMap::new();
    let mut check = |w: &mut World, injected: &BTreeMap<u32, Instant>, fated: &mut BTreeMap<u32, ExtEvent>| {
        out.clear();
        w.drain_external(&mut out);
        for e in &out {
            let at = injected.get(&e.tag).copied();
            assert!(at.is_some_and(|t| t <= e.at), "fate of a packet not injected (yet): {e:?}");
            assert!(!fated.contains_key(&e.tag), "two fates for one packet: {e:?}");
            match e.fate {
                ExtFate::Received => assert!(received.insert(e.tag, e.at).is_none(), "received twice: {e:?}"),
                ExtFate::Released => {
                    let r = received.remove(&e.tag);
                    assert!(r.is_some_and(|t| t <= e.at), "released before it was received: {e:?}");
                    fated.insert(e.tag, *e);
                }
                ExtFate::Delivered | ExtFate::Dropped => {
                    assert!(!received.contains_key(&e.tag), "received, then {e:?}");
                    fated.insert(e.tag, *e);
                }
            }
        }
    };
    for op in data.chunks(6).take(400) {
        let op = [op, &[0u8; 6][..6 - op.len()]].concat();
        match op[0] % 4 {
            0 if flows.len() < 12 => {
                let sta = op[1] as u32 % n_sta;
                let dir = if op[2] & 1 == 0 { Dir::Down } else { Dir::Up };
                let leg = [ExtLeg::Through, ExtLeg::Wired, ExtLeg::Wifi][op[3] as usize % 3];
                flows.push(w.add_external_flow_on(sta, dir, leg, format!("fuzz {}", flows.len())));
            }
            1 | 2 if !flows.is_empty() => {
                let f = flows[op[1] as usize % flows.len()];
                let len = 20 + u16::from_le_bytes([op[2], op[3]]) as u32 % (65536 - 20);
                injected.insert(tag, now);
                w.inject(f, len, tag);
                tag += 1;
            }
            _ => {
                // Time moves on: up to ~16 ms.
                let dt = u32::from_le_bytes([op[2], op[3], op[4], op[5]]) as u64 % 16_000_000;
                now = Instant(now.0 + dt);
                w.step_to(now);
            }
        }
        check(&mut w, &injected, &mut fated);
    }
    // Two seconds later every packet has met its fate.
    now = Instant(now.0 + 2_000_000_000);
    w.step_to(now);
    check(&mut w, &injected, &mut fated);
    assert_eq!(fated.len(), injected.len(), "packets without a fate");
    w.finish_at(now);
}
