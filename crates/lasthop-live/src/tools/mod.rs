//! The live tools: the mechanisms' sans-IO controllers (`lasthop-algo`) driven by the wall
//! clock against a real host — a Linux AP's nl80211 and rtnetlink, or the emulator's AP host
//! that speaks the same messages. Each tool is both `lasthop <tool> ...` (through the Python
//! command line) and `lasthop-live <tool> ...` (a standalone binary that needs no Python);
//! [`main`] is the one entry point of both.
//!
//! * [`wqm`]: the WQM buffer sizer.
//! * [`vwire`]: the Virtual Wires split proxy (TPROXY).
//! * [`aggctl`]: sender rate control from the receivers' aggregation level (UDP).
//!
//! Shared pieces: [`args`] (options and one-line errors), [`host`] (the sensor/actuator seam
//! over nl80211 and rtnetlink), [`statefile`] (what a tool changed, restored on exit and after
//! a crash), [`metrics`] (a Prometheus endpoint).

pub mod aggctl;
pub mod args;
pub mod cmd;
pub mod host;
pub mod metrics;
#[cfg(feature = "quic")]
pub mod quic;
pub mod spec_opts;
pub mod statefile;
pub mod vwire;
pub mod wqm;

const HELP: &str = "\
lasthop-live: lasthop's live tools (no Python needed)

usage: lasthop-live TOOL [options]    (TOOL --help for its options)

  wqm       size an AP's transmit queue with WQM
  vwire     the Virtual Wires split proxy (transparent, TPROXY)
  aggctl    rate control from the receivers' aggregation level (send, recv)
  quic      an HTTP/3 server and client with Bursty QUIC and history-based windows
  version   print the version
";

/// Run the tool named by `argv[0]` with the rest of `argv`; returns the exit code (0 ok,
/// 1 failure while running, 2 bad usage).
pub fn main(argv: &[String]) -> i32 {
    let Some(tool) = argv.first() else {
        eprint!("{HELP}");
        return 2;
    };
    let rest = &argv[1..];
    match tool.as_str() {
        "wqm" => wqm::main(rest),
        "vwire" => vwire::main(rest),
        "aggctl" => aggctl::main(rest),
        #[cfg(feature = "quic")]
        "quic" => quic::main(rest),
        #[cfg(not(feature = "quic"))]
        "quic" => {
            eprintln!("lasthop-live: quic: this build has no QUIC (build with --features quic: make build)");
            2
        }
        "version" | "--version" => {
            println!("lasthop-live {}", env!("CARGO_PKG_VERSION"));
            0
        }
        "-h" | "--help" | "help" => {
            print!("{HELP}");
            0
        }
        other => {
            eprintln!("lasthop-live: unknown tool {} (tools: wqm, vwire, aggctl, quic)", args::show(other));
            2
        }
    }
}
