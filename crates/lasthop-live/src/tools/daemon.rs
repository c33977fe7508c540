//! The skeleton every live tool runs in: what a well-behaved daemon does, written once.
//!
//! A tool parses its options (the shared ones — `--stats`, `--duration`, `--record`,
//! `--metrics` — with the helpers here), finds everything a user could have got wrong, and
//! only then starts a [`Daemon`]: with a restore record claimed first ([`claim`]: a record a
//! crashed instance left is put back and said so), the stop signals installed, the optional
//! metrics endpoint and record file open. The daemon runs the tool's [`Service`] round after
//! round until a stop signal or the end of `--duration` (a tool may drain before it ends:
//! [`Service::on_stop`]), and [`Daemon::finish`] puts back what the record lists, one line per
//! change. What a tool decides stays in its service; the sans-IO controllers it drives stay in
//! `lasthop-algo`.

use super::args::{Args, UsageError};
use super::metrics::Exporter;
use super::statefile::{Found, StateFile};
use crate::sys::signals::StopSignals;
use std::io::Write;
use std::time::{Duration, Instant};

/// `--stats SECONDS`: how often the live view is printed (`default` seconds when the option is
/// not given; 0: never).
pub fn stats_option(a: &mut Args, default: f64) -> Result<Option<Duration>, UsageError> {
    let s = match a.value("stats") {
        None => default,
        Some(v) => v.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0 && *x <= 3600.0).ok_or_else(|| a.err("stats", &v, "seconds, 0 to 3600"))?,
    };
    Ok((s > 0.0).then(|| Duration::from_secs_f64(s)))
}

/// `--duration DUR`: stop after DUR (None: until a stop signal).
pub fn duration_option(a: &mut Args) -> Result<Option<Duration>, UsageError> {
    a.duration_opt("duration", Duration::from_millis(1), Duration::from_secs(10 * 365 * 86_400))
}

/// `--record FILE`: a file one JSON line is appended to per interval.
pub fn open_record(path: &str) -> Result<std::fs::File, String> {
    std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|e| format!("--record = {path:?}: {e}"))
}

/// `--metrics ADDR:PORT`: the Prometheus endpoint, listening before anything is changed.
pub fn start_metrics(addr: Option<&str>) -> Result<Option<Exporter>, String> {
    addr.map(Exporter::start).transpose()
}

/// Claim the restore record of `tool` for `target` (`statefile.rs`); what a crashed instance
/// left is put back first, a line each (`tool: restored ...`). Returns the record and whether
/// anything was put back (what the host holds now is then the original).
pub fn claim(tool: &str, target: &str) -> Result<(StateFile, bool), String> {
    let (sf, found) = StateFile::claim(tool, target)?;
    let restored = matches!(found, Found::Restored(_));
    if let Found::Restored(lines) = found {
        for l in lines {
            eprintln!("{tool}: {l}");
        }
    }
    Ok((sf, restored))
}

/// What a tool supplies to the skeleton: one round of its main loop.
pub trait Service {
    /// Read, decide, act, and wait until there is something to do again (at most a few tens
    /// of milliseconds, so a stop is seen in time). `Ok(false)`: the tool is done; `Err`: a
    /// failure while running.
    fn round(&mut self, d: &mut Daemon) -> Result<bool, String>;

    /// A stop signal arrived or `--duration` passed. `true` keeps the rounds going (the tool
    /// drains, and ends them itself); by default the loop ends at once.
    fn on_stop(&mut self, _d: &mut Daemon) -> bool {
        false
    }
}

/// A running tool's lifecycle: its stop signals, `--duration`, metrics endpoint, record file
/// and restore record.
pub struct Daemon {
    /// The name messages start with (`wqm`, `aggctl send`).
    name: String,
    quiet: bool,
    signals: StopSignals,
    run_for: Option<Duration>,
    t0: Instant,
    exporter: Option<Exporter>,
    record: Option<std::fs::File>,
    state: Option<StateFile>,
}

/// The parts a tool opened or claimed before it starts (each optional).
#[derive(Default)]
pub struct Parts {
    pub run_for: Option<Duration>,
    pub exporter: Option<Exporter>,
    pub record: Option<std::fs::File>,
    pub state: Option<StateFile>,
}

impl Daemon {
    /// Install the stop signals. If that fails, what the restore record lists is put back
    /// before the error (`signal handlers: ...`) is returned.
    pub fn start(name: &str, quiet: bool, parts: Parts) -> Result<Daemon, String> {
        let signals = match StopSignals::install() {
            Ok(s) => s,
            Err(e) => {
                if let Some(sf) = parts.state {
                    let _ = sf.restore_all();
                }
                return Err(format!("signal handlers: {e}"));
            }
        };
        let Parts { run_for, exporter, record, state } = parts;
        Ok(Daemon { name: name.to_string(), quiet, signals, run_for, t0: Instant::now(), exporter, record, state })
    }

    pub fn quiet(&self) -> bool {
        self.quiet
    }

    /// Whether a stop signal (SIGINT, SIGTERM, SIGHUP) arrived.
    pub fn stop_requested(&self) -> bool {
        self.signals.stop_requested()
    }

    /// How long until `--duration` ends the run (None: no limit), from the start of [`run`].
    ///
    /// [`run`]: Daemon::run
    pub fn until_end(&self) -> Option<Duration> {
        self.run_for.map(|d| d.saturating_sub(self.t0.elapsed()))
    }

    /// Whether the metrics endpoint is on.
    pub fn has_metrics(&self) -> bool {
        self.exporter.is_some()
    }

    /// Publish a new metrics snapshot (rendered only when the endpoint is on).
    pub fn publish(&self, text: impl FnOnce() -> String) {
        if let Some(x) = &self.exporter {
            x.set(text());
        }
    }

    /// Append one line to the `--record` file, if there is one.
    pub fn write_record(&mut self, line: &serde_json::Value) {
        if let Some(f) = self.record.as_mut() {
            let _ = writeln!(f, "{line}");
        }
    }

    /// Run `s` round after round until it is done, or a stop signal or the end of
    /// `--duration` ends the loop (after the service has drained, if it does).
    pub fn run(&mut self, s: &mut impl Service) -> Result<(), String> {
        self.t0 = Instant::now();
        let mut stopping = false;
        loop {
            if !stopping && (self.stop_requested() || self.until_end().is_some_and(|d| d.is_zero())) {
                stopping = true;
                if !s.on_stop(self) {
                    return Ok(());
                }
            }
            if !s.round(self)? {
                return Ok(());
            }
        }
    }

    /// Put back what the restore record lists (newest first), a line each (`quiet` keeps the
    /// successes to itself), and give the stop signals back. Returns whether all of it was
    /// restored.
    pub fn finish(self) -> bool {
        drop(self.signals);
        let mut ok = true;
        if let Some(sf) = self.state {
            for r in sf.restore_all() {
                match r {
                    Ok(l) if self.quiet => drop(l),
                    Ok(l) => eprintln!("{}: {l}", self.name),
                    Err(l) => {
                        eprintln!("{}: {l}", self.name);
                        ok = false;
                    }
                }
            }
        }
        ok
    }
}
