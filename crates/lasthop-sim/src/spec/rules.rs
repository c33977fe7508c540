//! Rules across keys that `Spec::problems` applies per flow: the WMM access category a node
//! can carry, and the split proxy's and Virtual Wires' keys; and a flow's utility function.

use super::*;

/// The WMM rule of one flow's `ac`: (value, allowed). Nodes that keep one queue (a non-QoS
/// `ofdm` station, a mesh relay's interface queue, the firmware model's station queues, a
/// WQM-sized buffer) carry only `mac.access_category` (`world/wmm.rs`).
pub(super) fn ac_problem(s: &Spec, f: &FlowSpec) -> Option<(String, String)> {
    let ac = f.ac?;
    let value = format!("{:?}", ac.name());
    if f.direction == Direction::Cross {
        return Some((value, "not used with direction = \"cross\" (cross traffic never enters the cell)".into()));
    }
    if ac == s.main_ac() {
        return None;
    }
    let main = format!("mac.access_category ({:?})", s.mac.access_category.name());
    let relayed = |i: u32| {
        let i = i as usize;
        s.stations.get(i).is_some_and(|st| st.parent.is_some()) || s.stations.iter().any(|st| st.parent == Some(i as u32))
    };
    let hw;
    let why = if s.phy.standard == Standard::Ofdm {
        "for standard \"ofdm\" (a non-QoS station has one DCF and one queue)"
    } else if s.ap.driver.hardware_queue() {
        hw = format!("with ap.driver = {:?} (the hardware model has one queue per station)", s.ap.driver.as_str());
        &hw
    } else if s.ap.buffer_sizer == BufferSizer::Wqm {
        "with ap.buffer_sizer = \"wqm\" (WQM sizes one interface queue)"
    } else if relayed(f.station) {
        "for a flow through a mesh relay (a relay has one interface queue)"
    } else {
        return None;
    };
    Some((value, format!("{main} only, {why}")))
}

const CCS: [Cc; 3] = [Cc::NewReno, Cc::Cubic, Cc::Bbr];

/// The split / vwire rules of one flow: (key, value, allowed).
pub(super) fn vwire_flow_problems(s: &Spec, f: &FlowSpec) -> Vec<Problem> {
    let mut p = Vec::new();
    let tcp = f.pattern == Pattern::Tcp;
    let bulk = f.app == App::Bulk;
    if f.split {
        if !tcp || f.direction == Direction::Cross {
            p.push(("split".into(), "true".into(), "only for pattern = \"tcp\" downloads and uploads".into()));
        }
        if !bulk {
            p.push(("split".into(), "true".into(), "only with app = \"bulk\"".into()));
        }
        if s.stations.get(f.station as usize).is_some_and(|st| st.parent.is_some()) {
            p.push(("split".into(), "true".into(), "only to a station associated with the AP".into()));
        }
    }
    if !CCS.contains(&f.split_wired_cc) {
        p.push(("split_wired_cc".into(), format!("{:?}", f.split_wired_cc.as_str()), "one of \"newreno\", \"cubic\", \"bbr\"".into()));
    }
    if f.app_rate_bps > 0 && !(tcp && bulk && f.bytes == 0) {
        p.push(("app_rate".into(), format!("{}bps", f.app_rate_bps), "only for pattern = \"tcp\" bulk flows without bytes".into()));
    }
    if (f.app_class.is_some() || f.utility.is_some()) && !f.split {
        p.push(("app_class".into(), "(set)".into(), "app_class and utility only with split = true".into()));
    }
    p
}

/// The `[vwire]` rule across keys: the send buffer within the relay buffer.
pub(super) fn vwire_problems(s: &Spec) -> Vec<Problem> {
    let mut p = Vec::new();
    let v = &s.vwire_or_default();
    if v.sndbuf_bytes < 4096 || v.sndbuf_bytes > v.relay_buffer_bytes {
        p.push(("vwire.sndbuf".into(), v.sndbuf_bytes.to_string(), "4096 <= sndbuf <= relay_buffer".into()));
    }
    p
}

/// The optimizer's utility for a spec'd one.
pub fn utility_of(u: &UtilitySpec) -> lasthop_algo::control::vwire::Utility {
    use lasthop_algo::control::vwire::Utility;
    match u {
        UtilitySpec::Step(steps) => Utility::ladder(steps),
        UtilitySpec::Log(w) => Utility::log(*w),
    }
}
