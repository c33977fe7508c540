//! The live tools: the mechanisms' sans-IO controllers (`lasthop-algo`) driven by the wall
//! clock against a real host — a Linux AP's nl80211 and rtnetlink, or the emulator's AP host
//! that speaks the same messages. Each tool is both `lasthop <tool> ...` (through the Python
//! command line) and `lasthop-live <tool> ...` (a standalone binary that needs no Python);
//! [`main`] is the one entry point of both.
//!
//! * [`wqm`]: the WQM buffer sizer.
//! * [`vwire`]: the Virtual Wires split proxy (TPROXY).
//! * [`aggctl`]: sender rate control from the receivers' aggregation level (UDP).
//! * [`run`]: not a live tool: one simulation of a spec and its result file (`lasthop run`
//!   without Python).
//!
//! Shared pieces: [`daemon`] (the skeleton each tool runs in: stop signals, `--duration`,
//! restore on exit and after a crash, metrics, record file), [`args`] (options and one-line
//! errors), [`host`] (the sensor/actuator seam
//! over nl80211 and rtnetlink), [`statefile`] (what a tool changed, restored on exit and after
//! a crash), [`metrics`] (a Prometheus endpoint).

pub mod aggctl;
pub mod args;
pub mod cmd;
pub mod daemon;
pub mod host;
pub mod metrics;
#[cfg(feature = "quic")]
pub mod quic;
pub mod run;
pub mod spec_opts;
pub mod statefile;
pub mod vwire;
pub mod wqm;

/// A live tool: its name (`lasthop NAME`, `lasthop-live NAME`), what it does in one line, and
/// its entry point (the arguments after the name; returns the exit code).
pub struct Tool {
    pub name: &'static str,
    pub about: &'static str,
    pub main: fn(&[String]) -> i32,
}

/// The live tools, the one list `lasthop-live`, `lasthop <tool>` and `lasthop --help` read.
pub const TOOLS: [Tool; 4] = [
    Tool { name: "wqm", about: "size an AP's transmit queue with WQM (live daemon)", main: wqm::main },
    Tool { name: "vwire", about: "the Virtual Wires split proxy on a Linux AP (transparent, TPROXY)", main: vwire::main },
    Tool {
        name: "aggctl",
        about: "rate control from the receivers' aggregation level: aggctl send|recv (UDP)",
        main: aggctl::main,
    },
    Tool {
        name: "quic",
        about: "an HTTP/3 server and client with Bursty QUIC and history-based windows: quic serve|get",
        main: quic_main,
    },
];

#[cfg(feature = "quic")]
fn quic_main(rest: &[String]) -> i32 {
    quic::main(rest)
}

#[cfg(not(feature = "quic"))]
fn quic_main(_rest: &[String]) -> i32 {
    eprintln!("lasthop-live: quic: this build has no QUIC (build with --features quic: make build)");
    2
}

fn help() -> String {
    let mut h = String::from("lasthop-live: lasthop's live tools (no Python needed)\n\nusage: lasthop-live TOOL [options]    (TOOL --help for its options)\n\n");
    for t in &TOOLS {
        h += &format!("  {:<9} {}\n", t.name, t.about);
    }
    h + "  run       simulate a spec and write its result file as `lasthop run` does\n  version   print the version\n"
}

/// Run the tool named by `argv[0]` with the rest of `argv`; returns the exit code (0 ok,
/// 1 failure while running, 2 bad usage).
pub fn main(argv: &[String]) -> i32 {
    let Some(tool) = argv.first() else {
        eprint!("{}", help());
        return 2;
    };
    let rest = &argv[1..];
    if let Some(t) = TOOLS.iter().find(|t| t.name == tool.as_str()) {
        return (t.main)(rest);
    }
    match tool.as_str() {
        // Not a live tool (`TOOLS` is what `lasthop <tool>` forwards here): `lasthop run`'s
        // simulation without Python.
        "run" => run::main(rest),
        "version" | "--version" => {
            println!("lasthop-live {} ({} build)", run::code_version(), run::build_kind());
            0
        }
        "-h" | "--help" | "help" => {
            print!("{}", help());
            0
        }
        other => {
            let names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
            eprintln!("lasthop-live: unknown tool {} (tools: {})", args::show(other), names.join(", "));
            2
        }
    }
}
