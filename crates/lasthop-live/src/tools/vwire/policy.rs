//! Per-flow policy for `lasthop vwire`: which flows get a fixed application class, a utility,
//! a device type — from a TOML file of rules, first match wins:
//!
//! ```toml
//! [[flow]]
//! client = "10.77.1.1"          # optional: the station's address, or a prefix "10.77.1.0/24"
//! server = "10.77.0.1"          # optional: the server's address or prefix
//! server_port = 5201            # optional: one port, or [lo, hi]
//! class = "video_4k"            # optional: video_sd | video_hd | video_4k | bulk | web | voip
//! utility = "step:32Mbps:10"    # optional: "step:RATE:U[,RATE:U...]" or "log:W"
//! device = "tv"                 # optional: unknown | phone | laptop | tv
//! ```
//!
//! A flow no rule matches is classified by the forest and gets its class's default utility,
//! as in the simulator. Utilities use the spec's text form (docs/spec.md) and the same
//! `lasthop_algo::control::vwire::Utility`.

use lasthop_algo::control::vwire::{AppClass, DeviceType, Utility};
use std::net::Ipv4Addr;

#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub client: Option<(Ipv4Addr, u8)>,
    pub server: Option<(Ipv4Addr, u8)>,
    pub server_port: Option<(u16, u16)>,
    pub class: Option<AppClass>,
    pub utility: Option<Utility>,
    pub device: Option<DeviceType>,
}

/// What a flow gets.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowPolicy {
    pub class: Option<AppClass>,
    pub utility: Option<Utility>,
    pub device: DeviceType,
    /// Index of the rule that matched.
    pub rule: Option<usize>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Policy {
    pub rules: Vec<Rule>,
}

fn in_prefix(a: Ipv4Addr, (net, len): (Ipv4Addr, u8)) -> bool {
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len as u32) };
    u32::from(a) & mask == u32::from(net) & mask
}

impl Policy {
    pub fn lookup(&self, client: Ipv4Addr, server: Ipv4Addr, server_port: u16) -> FlowPolicy {
        for (i, r) in self.rules.iter().enumerate() {
            if r.client.is_some_and(|p| !in_prefix(client, p)) || r.server.is_some_and(|p| !in_prefix(server, p)) || r.server_port.is_some_and(|(lo, hi)| server_port < lo || server_port > hi) {
                continue;
            }
            return FlowPolicy { class: r.class, utility: r.utility.clone(), device: r.device.unwrap_or_default(), rule: Some(i) };
        }
        FlowPolicy::default()
    }

    /// Parse the file's text; errors name the rule and key (`flow[2].utility = "...": ...`).
    pub fn parse(text: &str) -> Result<Policy, String> {
        let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let line = e.span().map(|sp| text[..sp.start.min(text.len())].lines().count().max(1));
            let msg = e.message().split_whitespace().collect::<Vec<_>>().join(" ");
            match line {
                Some(l) => format!("not TOML (line {l}): {msg}"),
                None => format!("not TOML: {msg}"),
            }
        })?;
        let mut rules = Vec::new();
        for (k, v) in &doc {
            if k != "flow" {
                return Err(format!("{k}: unknown table (only [[flow]] rules)"));
            }
            let arr = v.as_array().ok_or("flow: use [[flow]] tables")?;
            for (i, t) in arr.iter().enumerate() {
                let t = t.as_table().ok_or_else(|| format!("flow[{i}]: a table"))?;
                rules.push(rule(i, t)?);
            }
        }
        Ok(Policy { rules })
    }
}

fn shown(v: &toml::Value) -> String {
    let s = match v {
        toml::Value::String(x) => format!("{x:?}"),
        toml::Value::Integer(x) => x.to_string(),
        toml::Value::Float(x) => x.to_string(),
        toml::Value::Boolean(x) => x.to_string(),
        toml::Value::Datetime(x) => x.to_string(),
        toml::Value::Array(a) => format!("an array of {}", a.len()),
        toml::Value::Table(_) => "a table".to_string(),
    };
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s
    }
}

fn rule(i: usize, t: &toml::Table) -> Result<Rule, String> {
    let mut r = Rule { client: None, server: None, server_port: None, class: None, utility: None, device: None };
    for (k, v) in t {
        let bad = |allowed: &str| format!("flow[{i}].{k} = {}: {allowed}", shown(v));
        match k.as_str() {
            "client" | "server" => {
                let p = v.as_str().and_then(prefix).ok_or_else(|| bad("an IPv4 address or prefix, like \"10.77.1.1\" or \"10.77.1.0/24\""))?;
                if k == "client" {
                    r.client = Some(p);
                } else {
                    r.server = Some(p);
                }
            }
            "server_port" => {
                let port = |x: &toml::Value| x.as_integer().filter(|&p| (1..=65535).contains(&p)).map(|p| p as u16);
                r.server_port = Some(match v {
                    toml::Value::Array(a) if a.len() == 2 => match (port(&a[0]), port(&a[1])) {
                        (Some(lo), Some(hi)) if lo <= hi => (lo, hi),
                        _ => return Err(bad("a port 1..65535 or [lo, hi]")),
                    },
                    x => port(x).map(|p| (p, p)).ok_or_else(|| bad("a port 1..65535 or [lo, hi]"))?,
                });
            }
            "class" => {
                let s = v.as_str().unwrap_or("");
                r.class = Some(AppClass::ALL.into_iter().find(|c| c.name() == s).ok_or_else(|| bad("one of video_sd, video_hd, video_4k, bulk, web, voip"))?);
            }
            "utility" => {
                r.utility = Some(v.as_str().and_then(parse_utility).ok_or_else(|| bad("\"step:RATE:U[,RATE:U...]\" (rates increasing, utilities >= 0 non-decreasing) or \"log:W\" with W > 0"))?);
            }
            "device" => {
                r.device = Some(match v.as_str().unwrap_or("") {
                    "unknown" => DeviceType::Unknown,
                    "phone" => DeviceType::Phone,
                    "laptop" => DeviceType::Laptop,
                    "tv" => DeviceType::Tv,
                    _ => return Err(bad("one of unknown, phone, laptop, tv")),
                });
            }
            _ => return Err(format!("flow[{i}].{k}: unknown key (client, server, server_port, class, utility, device)")),
        }
    }
    Ok(r)
}

fn prefix(s: &str) -> Option<(Ipv4Addr, u8)> {
    let (a, l) = match s.split_once('/') {
        Some((a, l)) => (a, l.parse::<u8>().ok().filter(|&l| l <= 32)?),
        None => (s, 32),
    };
    Some((a.parse().ok()?, l))
}

/// "step:32Mbps:10", "step:1.5Mbps:2,4Mbps:6" or "log:0.1" (the spec's form).
pub fn parse_utility(s: &str) -> Option<Utility> {
    let (kind, rest) = s.split_once(':')?;
    match kind {
        "log" => {
            let w: f64 = rest.trim().parse().ok()?;
            (w.is_finite() && w > 0.0).then(|| Utility::log(w))
        }
        "step" => {
            let mut steps: Vec<(f64, f64)> = Vec::new();
            for part in rest.split(',') {
                let (rate, u) = part.rsplit_once(':')?;
                let bps = crate::tools::args::parse_rate(rate)? as f64;
                let u: f64 = u.trim().parse().ok()?;
                if bps <= 0.0 || !u.is_finite() || u < 0.0 {
                    return None;
                }
                if let Some(&(b0, u0)) = steps.last() {
                    if bps <= b0 || u < u0 {
                        return None;
                    }
                }
                steps.push((bps, u));
            }
            Some(Utility::ladder(&steps))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_match_in_order() {
        let p = Policy::parse(
            r#"
            [[flow]]
            client = "10.77.1.2"
            server_port = [8000, 8100]
            class = "video_4k"
            utility = "step:32Mbps:10"
            device = "tv"
            [[flow]]
            client = "10.77.1.0/24"
            utility = "log:0.1"
            "#,
        )
        .unwrap();
        let a = p.lookup("10.77.1.2".parse().unwrap(), "10.77.0.1".parse().unwrap(), 8080);
        assert_eq!((a.class, a.device, a.rule), (Some(AppClass::Video4k), DeviceType::Tv, Some(0)));
        assert_eq!(a.utility, Some(Utility::step(32e6, 10.0)));
        let b = p.lookup("10.77.1.2".parse().unwrap(), "10.77.0.1".parse().unwrap(), 443);
        assert_eq!((b.class, b.utility, b.rule), (None, Some(Utility::log(0.1)), Some(1)));
        let c = p.lookup("10.77.2.9".parse().unwrap(), "10.77.0.1".parse().unwrap(), 443);
        assert_eq!(c, FlowPolicy::default());
    }

    #[test]
    fn bad_rules_name_the_key() {
        for (text, want) in [
            ("[[flow]]\nclass = \"movie\"", "flow[0].class = \"movie\": one of"),
            ("[[flow]]\nutility = \"step:2Mbps:5,1Mbps:6\"", "flow[0].utility"),
            ("[[flow]]\nclient = \"10.0.0.300\"", "flow[0].client"),
            ("[[flow]]\nserver_port = [9, 3]", "flow[0].server_port"),
            ("[[flow]]\nspeed = 3", "flow[0].speed: unknown key"),
            ("[rules]\n", "rules: unknown table"),
            ("[[flow]\n", "not TOML"),
        ] {
            let e = Policy::parse(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
