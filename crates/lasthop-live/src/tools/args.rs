//! Command-line options of the live tools: `--key value`, `--key=value` and flags, with the
//! units lasthop specs use ("2.5ms", "100ms", "1s"; "600Mbps", "54Mbit"), and one-line errors
//! that name the option, the value and what is allowed.

use std::time::Duration;

/// A user error: one line, exit code 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A value echoed in an error, clipped so a huge argument cannot make a huge line.
pub fn show(v: &str) -> String {
    if v.chars().count() > 60 {
        format!("{:?}…", v.chars().take(60).collect::<String>())
    } else {
        format!("{v:?}")
    }
}

/// Parsed options: each `--name` with its value (None for flags), in order, and positionals.
pub struct Args {
    tool: String,
    opts: Vec<(String, Option<String>)>,
    pub positional: Vec<String>,
    used: Vec<bool>,
    /// Values for options not given on the command line, each with where it came from (a
    /// spec key: `--spec`); the command line wins.
    fallback: Vec<(String, Option<String>, String)>,
}

impl Args {
    /// Split `argv` (after the tool name). `flags` are the options that take no value; every
    /// other `--name` takes one. `-h` is `--help`, `-q` `--quiet`, `-o` `--out`.
    pub fn parse(tool: &str, argv: &[String], flags: &[&str], valued: &[&str]) -> Result<Args, UsageError> {
        let mut opts = Vec::new();
        let mut positional = Vec::new();
        let mut i = 0;
        while i < argv.len() {
            let a = &argv[i];
            let a = match a.as_str() {
                "-h" => "--help",
                "-q" => "--quiet",
                "-o" => "--out",
                a => a,
            };
            if a == "--" {
                positional.extend(argv[i + 1..].iter().cloned());
                break;
            }
            if let Some(body) = a.strip_prefix("--") {
                let (name, inline) = match body.split_once('=') {
                    Some((n, v)) => (n.to_string(), Some(v.to_string())),
                    None => (body.to_string(), None),
                };
                if name == "help" || flags.contains(&name.as_str()) {
                    if inline.is_some() {
                        return Err(UsageError(format!("{tool}: --{name} takes no value")));
                    }
                    opts.push((name, None));
                } else if valued.contains(&name.as_str()) {
                    let v = match inline {
                        Some(v) => v,
                        None => {
                            i += 1;
                            argv.get(i).cloned().ok_or_else(|| UsageError(format!("{tool}: --{name} needs a value")))?
                        }
                    };
                    opts.push((name, Some(v)));
                } else {
                    let mut known: Vec<String> = flags.iter().chain(valued).map(|s| format!("--{s}")).collect();
                    known.sort();
                    return Err(UsageError(format!("{tool}: unknown option --{name} (options: {})", known.join(", "))));
                }
            } else if a.starts_with('-') && a.len() > 1 {
                return Err(UsageError(format!("{tool}: unknown option {}", show(a))));
            } else {
                positional.push(a.to_string());
            }
            i += 1;
        }
        let used = vec![false; opts.len()];
        Ok(Args { tool: tool.to_string(), opts, positional, used, fallback: Vec::new() })
    }

    pub fn help(&self) -> bool {
        self.opts.iter().any(|(n, _)| n == "help")
    }

    /// Take `--name` from `origin` (a value, or None for a flag) unless the command line gives it.
    pub fn fallback(&mut self, name: &str, value: Option<String>, origin: &str) {
        self.fallback.push((name.to_owned(), value, origin.to_owned()));
    }

    fn given(&self, name: &str) -> bool {
        self.opts.iter().any(|(n, _)| n == name)
    }

    fn fallback_of(&self, name: &str) -> Option<&(String, Option<String>, String)> {
        self.fallback.iter().rev().find(|f| f.0 == name)
    }

    pub fn flag(&mut self, name: &str) -> bool {
        if !self.given(name) && self.fallback_of(name).is_some() {
            return true;
        }
        let mut found = false;
        for (i, (n, _)) in self.opts.iter().enumerate() {
            if n == name {
                self.used[i] = true;
                found = true;
            }
        }
        found
    }

    /// The last value given for `--name` (an option repeated: the last one wins).
    pub fn value(&mut self, name: &str) -> Option<String> {
        if !self.given(name) {
            return self.fallback_of(name).and_then(|f| f.1.clone());
        }
        let mut v = None;
        for (i, (n, val)) in self.opts.iter().enumerate() {
            if n == name {
                self.used[i] = true;
                v.clone_from(val);
            }
        }
        v
    }

    /// Every value given for `--name`, in order.
    pub fn values(&mut self, name: &str) -> Vec<String> {
        let mut out = Vec::new();
        for (i, (n, val)) in self.opts.iter().enumerate() {
            if n == name {
                self.used[i] = true;
                out.extend(val.clone());
            }
        }
        out
    }

    pub fn err(&self, name: &str, value: &str, allowed: &str) -> UsageError {
        if let (false, Some(f)) = (self.given(name), self.fallback_of(name)) {
            return UsageError(format!("{}: {} = {} (for --{name}): {allowed}", self.tool, f.2, show(value)));
        }
        UsageError(format!("{}: --{name} = {}: {allowed}", self.tool, show(value)))
    }

    pub fn duration(&mut self, name: &str, default: Duration, lo: Duration, hi: Duration) -> Result<Duration, UsageError> {
        Ok(self.duration_opt(name, lo, hi)?.unwrap_or(default))
    }

    pub fn duration_opt(&mut self, name: &str, lo: Duration, hi: Duration) -> Result<Option<Duration>, UsageError> {
        let Some(v) = self.value(name) else { return Ok(None) };
        let allowed = format!("a duration from {} to {}, like 2.5ms, 100ms or 1s", fmt_duration(lo), fmt_duration(hi));
        let d = parse_duration(&v).ok_or_else(|| self.err(name, &v, &allowed))?;
        if d < lo || d > hi {
            return Err(self.err(name, &v, &allowed));
        }
        Ok(Some(d))
    }

    pub fn rate_bps(&mut self, name: &str, lo: u64, hi: u64) -> Result<Option<u64>, UsageError> {
        let Some(v) = self.value(name) else { return Ok(None) };
        let allowed = format!("a bit rate from {} to {} bit/s, like 600Mbps or 54Mbit", lo, hi);
        let r = parse_rate(&v).ok_or_else(|| self.err(name, &v, &allowed))?;
        if r < lo || r > hi {
            return Err(self.err(name, &v, &allowed));
        }
        Ok(Some(r))
    }

    pub fn uint(&mut self, name: &str, lo: u64, hi: u64) -> Result<Option<u64>, UsageError> {
        let Some(v) = self.value(name) else { return Ok(None) };
        let n: u64 = v.trim().parse().map_err(|_| self.err(name, &v, &format!("an integer from {lo} to {hi}")))?;
        if n < lo || n > hi {
            return Err(self.err(name, &v, &format!("an integer from {lo} to {hi}")));
        }
        Ok(Some(n))
    }

    pub fn choice(&mut self, name: &str, default: &str, choices: &[&str]) -> Result<String, UsageError> {
        let Some(v) = self.value(name) else { return Ok(default.to_string()) };
        if choices.contains(&v.as_str()) {
            Ok(v)
        } else {
            Err(self.err(name, &v, &format!("one of {}", choices.join(", "))))
        }
    }

    /// Fails if positionals were given to a tool that takes none, or an option was never read.
    pub fn finish(&self, max_positional: usize) -> Result<(), UsageError> {
        if self.positional.len() > max_positional {
            return Err(UsageError(format!("{}: unexpected argument {}", self.tool, show(&self.positional[max_positional]))));
        }
        if let Some(i) = self.used.iter().position(|u| !u) {
            return Err(UsageError(format!("{}: --{} does not apply here", self.tool, self.opts[i].0)));
        }
        Ok(())
    }
}

/// "2.5ms", "100 ms", "1s", "250us", "1500ns", "2m" (minutes); a bare number is seconds.
pub fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = (&s[..split], s[split..].trim());
    if num.is_empty() || num.len() > 30 {
        return None;
    }
    let x: f64 = num.parse().ok()?;
    let scale = match unit {
        "" | "s" => 1e9,
        "ms" => 1e6,
        "us" | "µs" => 1e3,
        "ns" => 1.0,
        "m" | "min" => 60e9,
        _ => return None,
    };
    let ns = x * scale;
    (ns.is_finite() && (0.0..1e18).contains(&ns)).then(|| Duration::from_nanos(ns.round() as u64))
}

/// "600Mbps", "54Mbit", "1Gbps", "6.5Mbps", "100kbps", "1000000" (bit/s).
pub fn parse_rate(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = (&s[..split], s[split..].trim().to_ascii_lowercase());
    if num.is_empty() || num.len() > 30 {
        return None;
    }
    let x: f64 = num.parse().ok()?;
    let scale = match unit.as_str() {
        "" | "bps" | "bit" | "bit/s" => 1.0,
        "kbps" | "kbit" | "kbit/s" => 1e3,
        "mbps" | "mbit" | "mbit/s" => 1e6,
        "gbps" | "gbit" | "gbit/s" => 1e9,
        _ => return None,
    };
    let r = x * scale;
    (r.is_finite() && (0.0..1e15).contains(&r)).then(|| r.round() as u64)
}

pub fn fmt_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns >= 1_000_000_000 && (ns / 1_000_000) * 1_000_000 == ns {
        format!("{}s", ns as f64 / 1e9)
    } else if ns >= 1_000_000 {
        format!("{}ms", ns as f64 / 1e6)
    } else {
        format!("{}us", ns as f64 / 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_values_and_errors() {
        let mut p = Args::parse("wqm", &a(&["--limit", "2.5ms", "--dry-run", "--interval=100ms"]), &["dry-run"], &["limit", "interval", "phy"]).unwrap();
        assert_eq!(p.duration("limit", Duration::ZERO, Duration::from_micros(1), Duration::from_secs(1)).unwrap(), Duration::from_micros(2500));
        assert_eq!(p.duration("interval", Duration::ZERO, Duration::from_millis(1), Duration::from_secs(10)).unwrap(), Duration::from_millis(100));
        assert!(p.flag("dry-run"));
        assert_eq!(p.value("phy"), None);
        p.finish(0).unwrap();
        let e = Args::parse("wqm", &a(&["--bogus"]), &[], &["limit"]).err().unwrap();
        assert_eq!(e.0, "wqm: unknown option --bogus (options: --limit)");
        let mut p = Args::parse("wqm", &a(&["--limit", "fast"]), &[], &["limit"]).unwrap();
        let e = p.duration("limit", Duration::ZERO, Duration::from_micros(100), Duration::from_secs(1)).unwrap_err();
        assert_eq!(e.0, "wqm: --limit = \"fast\": a duration from 100us to 1s, like 2.5ms, 100ms or 1s");
        assert!(Args::parse("wqm", &a(&["--limit"]), &[], &["limit"]).is_err());
        let long = "9".repeat(5000);
        let mut p = Args::parse("wqm", &a(&["--limit", &long]), &[], &["limit"]).unwrap();
        let e = p.duration("limit", Duration::ZERO, Duration::from_micros(100), Duration::from_secs(1)).unwrap_err();
        assert!(e.0.len() < 200, "{}", e.0);
    }

    #[test]
    fn units() {
        assert_eq!(parse_rate("600Mbps"), Some(600_000_000));
        assert_eq!(parse_rate("6.5 Mbit"), Some(6_500_000));
        assert_eq!(parse_rate("x"), None);
        assert_eq!(parse_duration("1s"), Some(Duration::from_secs(1)));
        assert_eq!(parse_duration("-1s"), None);
        assert_eq!(parse_duration("1e3s"), None);
        assert_eq!(parse_duration("nan"), None);
    }
}
