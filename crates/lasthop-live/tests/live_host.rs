//! The live tools' OS side against the real kernel, in a network namespace each test makes
//! for itself (with a veth pair inside; nothing outside it is touched): rtnetlink reads and
//! changes `txqueuelen` and a root qdisc's limit, and `lasthop-live wqm` sizes a queue,
//! restores it on SIGTERM, and after a SIGKILL restores it at its next start.
//!
//! Skips (prints `skipped: <reason>` and passes) without root or without `ip`/`tc`.

#![allow(clippy::disallowed_methods)] // tests wait on the kernel and child processes

use lasthop_live::nl::socket::NlError;
use lasthop_live::tools::host::Rtnl;
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no arguments.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    for tool in ["ip", "tc"] {
        if Command::new(tool).arg("-V").output().is_err() {
            return Some(format!("no `{tool}`"));
        }
    }
    None
}

/// A namespace `lhlt<tag><pid>` with veth v0/v1 up; removed on drop.
struct Ns {
    name: String,
}

impl Ns {
    fn new(tag: &str) -> Option<Ns> {
        let name = format!("lhlt{tag}{}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        let ok = |c: &mut Command| c.status().map(|s| s.success()).unwrap_or(false);
        if !ok(Command::new("ip").args(["netns", "add", &name])) {
            return None;
        }
        let ns = Ns { name };
        let n = ns.name.as_str();
        for args in [
            vec!["-n", n, "link", "add", "v0", "type", "veth", "peer", "name", "v1"],
            vec!["-n", n, "link", "set", "v0", "up"],
            vec!["-n", n, "link", "set", "v1", "up"],
        ] {
            if !ok(Command::new("ip").args(&args)) {
                return None;
            }
        }
        Some(ns)
    }

    fn tc(&self, args: &[&str]) -> String {
        let o = Command::new("tc").args(["-n", &self.name]).args(args).output().unwrap();
        assert!(o.status.success(), "tc {args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn ip(&self, args: &[&str]) -> String {
        let o = Command::new("ip").args(["-n", &self.name]).args(args).output().unwrap();
        assert!(o.status.success(), "ip {args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Run `f` on a thread inside the namespace.
    fn within<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        let path = format!("/run/netns/{}", self.name);
        std::thread::scope(|s| {
            s.spawn(|| {
                let file = std::fs::File::open(&path).unwrap();
                // SAFETY: setns on this thread with a namespace file we hold open.
                assert_eq!(unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) }, 0);
                f()
            })
            .join()
            .unwrap()
        })
    }

    fn pfifo_limit(&self) -> Option<u32> {
        let out = self.tc(&["qdisc", "show", "dev", "v0"]);
        let i = out.find("limit ")?;
        out[i + 6..].split('p').next()?.trim().parse().ok()
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.name]).output();
    }
}

macro_rules! require {
    ($tag:expr) => {{
        if let Some(r) = skip_reason() {
            eprintln!("skipped: {r}");
            return;
        }
        match Ns::new($tag) {
            Some(ns) => ns,
            None => {
                eprintln!("skipped: cannot build a namespace with a veth pair");
                return;
            }
        }
    }};
}

#[test]
fn rtnetlink_reads_and_changes_txqueuelen_and_qdisc_limits() {
    let ns = require!("rt");
    ns.tc(&["qdisc", "replace", "dev", "v0", "root", "pfifo", "limit", "300"]);
    let (link, q, q2, link2, bfifo_change) = ns.within(|| {
        let mut r = Rtnl::open().unwrap();
        let link = r.link("v0").unwrap();
        r.set_txqlen(link.ifindex, 777).unwrap();
        let link2 = r.link("v0").unwrap();
        let q = r.root_qdisc(link.ifindex).unwrap().unwrap();
        r.set_qdisc_limit(&q, 123).unwrap();
        let q2 = r.root_qdisc(link.ifindex).unwrap().unwrap();
        let mut b = q2.clone();
        b.kind = "bfifo".into();
        let bfifo_change = r.set_qdisc_limit(&b, 5);
        (link, q, q2, link2, bfifo_change)
    });
    assert_eq!(link.name, "v0");
    assert_eq!(link.txqlen, Some(1000));
    assert_eq!(link2.txqlen, Some(777));
    assert!(ns.ip(&["link", "show", "v0"]).contains("qlen 777"));
    assert_eq!((q.kind.as_str(), q.limit, q.qlen), ("pfifo", Some(300), Some(0)));
    assert_eq!(q2.limit, Some(123));
    assert_eq!(ns.pfifo_limit(), Some(123));
    assert!(matches!(bfifo_change, Err(NlError::Protocol(_))));
    // Errors from the kernel come back as errno with its text.
    let e = ns.within(|| Rtnl::open().unwrap().link("nonesuch").unwrap_err());
    assert_eq!(e.errno(), Some(libc::ENODEV), "{e}");
}

fn wqm(ns: &Ns, args: &[&str]) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", &ns.name, env!("CARGO_BIN_EXE_lasthop-live"), "wqm"]).args(args);
    c
}

fn wait_until(d: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < d {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f()
}

#[test]
fn wqm_sizes_a_qdisc_and_restores_it_after_sigterm_and_after_sigkill() {
    let ns = require!("wq");
    ns.tc(&["qdisc", "replace", "dev", "v0", "root", "pfifo", "limit", "300"]);
    let args = ["--iface", "v0", "--rate", "100Mbps", "--interval", "10ms", "-q"];
    // Idle link: WQM starts at B_max, then its initial stage and additive increases.
    let child = wqm(&ns, &args).stderr(Stdio::piped()).spawn().unwrap();
    assert!(wait_until(Duration::from_secs(5), || ns.pfifo_limit() != Some(300)), "the limit never changed");
    // SAFETY: kill(2) on our child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(ns.pfifo_limit(), Some(300), "restored after SIGTERM");

    // SIGKILL: nothing restores, until the next start.
    let mut child = wqm(&ns, &args).stderr(Stdio::null()).spawn().unwrap();
    assert!(wait_until(Duration::from_secs(5), || ns.pfifo_limit() != Some(300)));
    child.kill().unwrap();
    child.wait().unwrap();
    let left = ns.pfifo_limit();
    assert_ne!(left, Some(300), "SIGKILL leaves the sized limit behind");
    // A second start: it restores first (one line says so), then works; a --show changes nothing.
    let show = wqm(&ns, &["--iface", "v0", "--rate", "100Mbps", "--show"]).output().unwrap();
    assert!(show.status.success());
    assert_eq!(ns.pfifo_limit(), left, "--show changes nothing");
    let child = wqm(&ns, &args).stderr(Stdio::piped()).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill(2) on our child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("restored the pfifo limit of v0 (300 packets) left by a wqm that did not exit cleanly"), "{err}");
    assert_eq!(ns.pfifo_limit(), Some(300));

    // A second daemon on the same queue is refused while the first runs; nothing changes.
    let mut first = wqm(&ns, &args).stderr(Stdio::null()).spawn().unwrap();
    assert!(wait_until(Duration::from_secs(5), || ns.pfifo_limit() != Some(300)));
    let second = wqm(&ns, &args).output().unwrap();
    assert_eq!(second.status.code(), Some(2));
    let msg = String::from_utf8_lossy(&second.stderr);
    assert!(msg.contains("already managed by wqm") && msg.lines().count() == 1, "{msg}");
    // SAFETY: kill(2) on our child.
    unsafe { libc::kill(first.id() as i32, libc::SIGINT) };
    first.wait().unwrap();
    assert_eq!(ns.pfifo_limit(), Some(300));
}

#[test]
fn wqm_bad_input_is_one_line_exit_2_and_changes_nothing() {
    let ns = require!("bd");
    let cases: &[(&[&str], &str)] = &[
        (&["--iface", "nope0"], "no such interface"),
        (&["--phy", "phy0"], "no wireless here"),
        (&["--iface", "v0"], "its root qdisc noqueue has no single packet limit"),
        (&["--iface", "v0", "--limit", "0"], "--limit = \"0\""),
        (&["--iface", "v0", "--interval", "soon"], "--interval = \"soon\""),
        (&["--iface", "v0", "--variant", "fast"], "--variant = \"fast\": one of aimd, aiad, miad, mimd"),
        (&["--iface", "v0", "--b-max", "-3"], "--b-max"),
        (&["--iface", "v0", "--bogus"], "unknown option --bogus"),
        (&[], "give --phy PHY or --iface IF"),
    ];
    for (args, want) in cases {
        let o = wqm(&ns, args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // noqueue was the root qdisc throughout and txqueuelen never moved.
    assert!(ns.tc(&["qdisc", "show", "dev", "v0"]).contains("noqueue"));
    assert!(ns.ip(&["link", "show", "v0"]).contains("qlen 1000"));
    // pfifo_fast: sized through txqueuelen, restored on exit.
    ns.tc(&["qdisc", "replace", "dev", "v0", "root", "pfifo_fast"]);
    let mut c = wqm(&ns, &["--iface", "v0", "--rate", "100Mbps", "--interval", "10ms", "-q"]).spawn().unwrap();
    assert!(wait_until(Duration::from_secs(5), || !ns.ip(&["link", "show", "v0"]).contains("qlen 1000")));
    // SAFETY: kill(2) on our child.
    unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
    assert!(c.wait().unwrap().success());
    assert!(ns.ip(&["link", "show", "v0"]).contains("qlen 1000"));
}
