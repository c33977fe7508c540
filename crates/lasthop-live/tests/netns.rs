//! The emulator's OS layer against the real kernel: namespaces, TUN devices, teardown, the
//! reaper after a SIGKILL, `down` and the already-up check.
//!
//! Every test that touches the OS first checks it can (root, `ip`, a probe namespace, a TUN
//! device) and otherwise prints `skipped: <reason>` and passes. Emu names carry a tag and this
//! process's pid so parallel tests and parallel runs never share a name.

// Tests wait for the kernel and for child processes with the wall clock, like the crate itself.
#![allow(clippy::disallowed_methods)]

use std::io::{BufRead, BufReader};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use lasthop_live::netns::{self, plan};
use lasthop_live::sys::signals::StopSignals;
use lasthop_live::tun::Tun;

/// Set in a re-executed copy of this test binary: the emu name for [`child_emulator`].
const CHILD_ENV: &str = "LASTHOP_LIVE_TEST_CHILD";
/// "sleep" (wait to be killed) or "signals" (wait for a stop signal, then tear down).
const CHILD_MODE_ENV: &str = "LASTHOP_LIVE_TEST_CHILD_MODE";

/// Why the OS tests cannot run here, if they cannot.
fn skip_reason() -> Option<String> {
    if !lasthop_live::sys::process::is_root() {
        return Some("not root".into());
    }
    // Unique per call: tests probe in parallel.
    static PROBES: AtomicU32 = AtomicU32::new(0);
    let probe = format!(
        "lhp{}x{}",
        std::process::id(),
        PROBES.fetch_add(1, Ordering::SeqCst)
    );
    match Command::new("ip").args(["netns", "add", &probe]).output() {
        Err(e) => return Some(format!("`ip` cannot run: {e}")),
        Ok(o) if !o.status.success() => {
            return Some(format!(
                "cannot create a namespace: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ))
        }
        Ok(_) => {
            let _ = Command::new("ip").args(["netns", "del", &probe]).output();
        }
    }
    if let Err(e) = Tun::create(&probe, 1500) {
        return Some(format!("cannot create a TUN device: {e}"));
    }
    None
}

macro_rules! require_os {
    () => {
        if let Some(reason) = skip_reason() {
            eprintln!("skipped: {reason}");
            return;
        }
    };
}

/// A per-test, per-process emu name: 2-letter tag + pid in base 36 (at most 5 characters).
fn emu_name(tag: &str) -> String {
    let mut pid = std::process::id();
    let mut digits = Vec::new();
    loop {
        digits.push(std::char::from_digit(pid % 36, 36).unwrap());
        pid /= 36;
        if pid == 0 {
            break;
        }
    }
    digits.reverse();
    format!("{tag}{}", digits.into_iter().collect::<String>())
}

fn namespaces_with_prefix(prefix: &str) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(prefix))
        .map(String::from)
        .collect()
}

fn state_file(name: &str) -> PathBuf {
    PathBuf::from(format!("/run/lasthop/emu/{name}.json"))
}

fn ip_in(ns: &str, args: &[&str]) -> String {
    let out = Command::new("ip")
        .arg("-n")
        .arg(ns)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ip -n {ns} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The interface flags between `<` and `>` in `ip link show` output.
fn link_flags(ns: &str, dev: &str) -> Vec<String> {
    let out = ip_in(ns, &["link", "show", "dev", dev]);
    let inner = out
        .split('<')
        .nth(1)
        .and_then(|s| s.split('>').next())
        .unwrap_or("");
    inner.split(',').map(String::from).collect()
}

fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

fn python_in(ns: &str, code: &str) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, "python3", "-c", code]);
    c
}

#[test]
fn plan_lays_out_names_and_addresses() {
    let t = plan("lh", 3, 1400).unwrap();
    assert_eq!((t.name.as_str(), t.prefix_len, t.mtu), ("lh", 16, 1400));
    let rows: Vec<(&str, &str, &str, Ipv4Addr)> = t
        .nodes
        .iter()
        .map(|n| (n.node.as_str(), n.netns.as_str(), n.ifname.as_str(), n.addr))
        .collect();
    assert_eq!(
        rows,
        [
            (
                "server",
                "lh-lh-server",
                "eth0",
                Ipv4Addr::new(10, 77, 0, 1)
            ),
            ("sta0", "lh-lh-sta0", "wlan0", Ipv4Addr::new(10, 77, 1, 1)),
            ("sta1", "lh-lh-sta1", "wlan0", Ipv4Addr::new(10, 77, 1, 2)),
            ("sta2", "lh-lh-sta2", "wlan0", Ipv4Addr::new(10, 77, 1, 3)),
        ]
    );
    assert_eq!(t.netns_of("sta2"), Some("lh-lh-sta2"));
    assert_eq!(t.netns_of("server"), Some("lh-lh-server"));
    assert_eq!(t.netns_of("sta3"), None);

    // The largest plan: host parts .0 and .255 are skipped, every address is unique and maps
    // back to its node, and all stay inside 10.77.0.0/16.
    let big = plan("big", 4000, 1500).unwrap();
    assert_eq!(big.nodes[254].addr, Ipv4Addr::new(10, 77, 1, 254)); // sta253
    assert_eq!(big.nodes[255].addr, Ipv4Addr::new(10, 77, 2, 1)); // sta254
    let mut seen = std::collections::BTreeSet::new();
    for (i, n) in big.nodes.iter().enumerate() {
        let o = n.addr.octets();
        assert_eq!((o[0], o[1]), (10, 77));
        assert!(o[3] != 0 && o[3] != 255, "{}", n.addr);
        assert!(seen.insert(n.addr));
        assert_eq!(big.node_index_of_addr(n.addr), Some(i));
    }
    for a in [
        [10, 77, 1, 0],
        [10, 77, 1, 255],
        [10, 77, 0, 2],
        [10, 77, 200, 1],
        [10, 78, 1, 1],
    ] {
        assert_eq!(big.node_index_of_addr(Ipv4Addr::from(a)), None, "{a:?}");
    }
    assert_eq!(
        t.node_index_of_addr(Ipv4Addr::new(10, 77, 1, 4)),
        None,
        "beyond sta2"
    );

    for bad in ["", "Lh", "abcdefghi", "a-b", "lh 1", "é"] {
        assert_eq!(
            plan(bad, 1, 1500).unwrap_err(),
            format!("emu name = {bad:?}: 1–8 characters a-z, 0-9")
        );
    }
    assert!(plan("abcdefgh", 1, 1500).is_ok());
    assert_eq!(plan("lh", 0, 1500).unwrap_err(), "emu stations = 0: 1–4000");
    assert_eq!(
        plan("lh", 4001, 1500).unwrap_err(),
        "emu stations = 4001: 1–4000"
    );
    assert_eq!(plan("lh", 1, 40).unwrap_err(), "emu mtu = 40: 68–65535");
}

#[test]
fn build_two_stations_and_carry_a_udp_datagram() {
    require_os!();
    let name = emu_name("t2");
    let mut b = netns::build(plan(&name, 2, 1400).unwrap()).unwrap();
    assert_eq!(b.tuns.len(), 3);

    let listed = namespaces_with_prefix(&format!("lh-{name}-"));
    for n in &b.topo.nodes {
        assert!(listed.contains(&n.netns), "{} not in {listed:?}", n.netns);
        let flags = link_flags(&n.netns, &n.ifname);
        assert!(
            flags.iter().any(|f| f == "UP"),
            "{} {}: {flags:?}",
            n.netns,
            n.ifname
        );
        assert!(
            link_flags(&n.netns, "lo").iter().any(|f| f == "UP"),
            "{} lo",
            n.netns
        );
        let link = ip_in(&n.netns, &["link", "show", "dev", &n.ifname]);
        assert!(link.contains("mtu 1400"), "{link}");
        let addr = ip_in(&n.netns, &["-4", "-o", "addr", "show", "dev", &n.ifname]);
        assert!(addr.contains(&format!("inet {}/16", n.addr)), "{addr}");
        // IPv6 is off: no link-local address, so nothing (RS, MLD) crosses the link.
        assert_eq!(
            ip_in(&n.netns, &["-6", "addr", "show"]).trim(),
            "",
            "{}",
            n.netns
        );
        let sysctl = Command::new("ip")
            .args(["netns", "exec", &n.netns, "cat"])
            .arg(format!("/proc/sys/net/ipv6/conf/{}/disable_ipv6", n.ifname))
            .output()
            .unwrap();
        if sysctl.status.success() {
            assert_eq!(
                String::from_utf8_lossy(&sysctl.stdout).trim(),
                "1",
                "{}",
                n.netns
            );
        }
    }
    let state = std::fs::read_to_string(state_file(&name)).unwrap();
    assert!(
        state.contains(&format!("\"pid\":{},", std::process::id())),
        "{state}"
    );
    assert_eq!(
        netns::netns_for(&name, "sta1").unwrap(),
        format!("lh-{name}-sta1")
    );
    let err = netns::netns_for(&name, "sta9").unwrap_err();
    assert!(
        err.contains("\"sta9\"") && err.contains("server, sta0, sta1"),
        "{err}"
    );

    let mut buf = [0u8; 2048];
    assert_eq!(
        b.tuns[2].recv(&mut buf).unwrap(),
        None,
        "nothing queued on sta1's device"
    );

    // A listener in sta0's namespace, then a datagram from the server's namespace.
    let sta0 = b.topo.nodes[1].netns.clone();
    let server = b.topo.nodes[0].netns.clone();
    let mut listener = python_in(
        &sta0,
        "import socket\n\
         s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
         s.bind(('10.77.1.1', 9)); s.settimeout(3); print('ready', flush=True)\n\
         d, a = s.recvfrom(2048); print(d.decode(), a[0], flush=True)",
    )
    .stdout(Stdio::piped())
    .spawn()
    .unwrap();
    let mut lines = BufReader::new(listener.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "ready");
    let sent = python_in(
        &server,
        "import socket\n\
         socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'hello-lasthop', ('10.77.1.1', 9))",
    )
    .status()
    .unwrap();
    assert!(sent.success());

    // The server's kernel routed it on-link out of eth0: it is on the server's TUN.
    let mut pkt = None;
    wait_until(Duration::from_secs(2), || {
        while let Some(n) = b.tuns[0].recv(&mut buf).unwrap() {
            let p = &buf[..n];
            if n >= 28 && p[0] >> 4 == 4 && p[9] == 17 && p[16..20] == [10, 77, 1, 1] {
                pkt = Some(p.to_vec());
                return true;
            }
        }
        false
    });
    let pkt = pkt.expect("no UDP packet to 10.77.1.1 on the server's TUN within 2 s");
    assert_eq!(&pkt[12..16], &[10, 77, 0, 1], "source is the server");
    assert_eq!(
        u16::from_be_bytes([pkt[22], pkt[23]]),
        9,
        "destination port"
    );

    // Carried by hand to sta0's TUN, it reaches the listener.
    assert!(b.tuns[1].send(&pkt).unwrap());
    let got = lines.next().expect("listener output").unwrap();
    assert_eq!(got, "hello-lasthop 10.77.0.1");
    assert!(listener.wait().unwrap().success());

    b.teardown();
    assert!(namespaces_with_prefix(&format!("lh-{name}-")).is_empty());
}

#[test]
fn teardown_and_drop_remove_everything() {
    require_os!();
    let name = emu_name("t3");
    let prefix = format!("lh-{name}-");
    let mut b = netns::build(plan(&name, 1, 1500).unwrap()).unwrap();
    assert_eq!(namespaces_with_prefix(&prefix).len(), 2);
    assert!(state_file(&name).exists());
    // A program inside a namespace is stopped by the teardown.
    let mut sleeper = Command::new("ip")
        .args(["netns", "exec", &b.topo.nodes[1].netns, "sleep", "30"])
        .spawn()
        .unwrap();
    assert!(wait_until(Duration::from_secs(2), || {
        Command::new("ip")
            .args(["netns", "pids", &b.topo.nodes[1].netns])
            .output()
            .is_ok_and(|o| !o.stdout.is_empty())
    }));
    b.teardown();
    b.teardown(); // idempotent
    assert!(b.tuns.is_empty());
    assert!(namespaces_with_prefix(&prefix).is_empty());
    assert!(!state_file(&name).exists());
    assert!(
        !sleeper.wait().unwrap().success(),
        "the sleeper was signalled"
    );
    drop(b);
    assert_eq!(
        netns::down(&name).unwrap(),
        format!("emu {name} was not up")
    );
    assert_eq!(
        netns::netns_for(&name, "server").unwrap_err(),
        format!("emu {name} is not up")
    );

    // A build that fails midway (the second device's name is invalid) leaves nothing behind.
    let mut broken = plan(&name, 2, 1500).unwrap();
    broken.nodes[2].ifname = "name-too-long-for-linux".into();
    let err = netns::build(broken)
        .err()
        .expect("an invalid interface name must fail");
    assert!(
        err.contains("name-too-long-for-linux") && !err.contains('\n'),
        "{err}"
    );
    assert!(namespaces_with_prefix(&prefix).is_empty());
    assert!(!state_file(&name).exists());

    // Drop without teardown cleans up too.
    let b = netns::build(plan(&name, 1, 1500).unwrap()).unwrap();
    drop(b);
    assert!(namespaces_with_prefix(&prefix).is_empty());
    assert!(!state_file(&name).exists());
}

/// Runs only in a re-executed copy of this binary (see [`spawn_child`]): builds emu
/// `$LASTHOP_LIVE_TEST_CHILD`, says READY, then waits to be killed or stopped.
#[test]
fn child_emulator() {
    let Ok(name) = std::env::var(CHILD_ENV) else {
        return;
    };
    let signals = StopSignals::install().unwrap();
    let mut b = netns::build(plan(&name, 2, 1500).unwrap()).unwrap();
    println!("READY");
    let deadline = Instant::now() + Duration::from_secs(30);
    let wait_for_stop = std::env::var(CHILD_MODE_ENV).as_deref() == Ok("signals");
    while Instant::now() < deadline && !(wait_for_stop && signals.stop_requested()) {
        std::thread::sleep(Duration::from_millis(10));
    }
    b.teardown();
    println!("STOPPED {:?}", signals.which());
}

/// Re-execute this test binary running only [`child_emulator`], and wait for READY (libtest
/// prints it after "test child_emulator ... " on the same line).
fn spawn_child(name: &str, mode: &str) -> Child {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_emulator",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, name)
        .env(CHILD_MODE_ENV, mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let ready = Instant::now() + Duration::from_secs(10);
    loop {
        let left = ready.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.ends_with("READY") => return child,
            Ok(_) => continue,
            Err(_) => {
                let _ = child.kill();
                panic!("child emulator {name} did not get ready");
            }
        }
    }
}

#[test]
fn reaper_cleans_up_after_sigkill() {
    require_os!();
    let name = emu_name("t4");
    let prefix = format!("lh-{name}-");
    let mut child = spawn_child(&name, "sleep");
    assert_eq!(namespaces_with_prefix(&prefix).len(), 3);
    assert!(state_file(&name).exists());
    child.kill().unwrap(); // SIGKILL: no destructor runs
    child.wait().unwrap();
    assert!(
        wait_until(Duration::from_secs(3), || namespaces_with_prefix(&prefix)
            .is_empty()
            && !state_file(&name).exists()),
        "the reaper left {:?}",
        namespaces_with_prefix(&prefix)
    );
}

#[test]
fn down_stops_a_running_emulator() {
    require_os!();
    let name = emu_name("t6");
    let mut child = spawn_child(&name, "signals");
    assert_eq!(
        netns::down(&name).unwrap(),
        format!("removed 3 namespaces of emu {name}")
    );
    assert!(
        child.wait().unwrap().success(),
        "the emulator tore itself down and exited"
    );
    assert!(namespaces_with_prefix(&format!("lh-{name}-")).is_empty());
    assert!(!state_file(&name).exists());
}

#[test]
fn down_cleans_up_when_the_reaper_is_gone_too() {
    require_os!();
    // A state file whose emulator (and reaper) are dead, and one leftover namespace.
    let name = emu_name("t7");
    let mut dead = Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    let ns = format!("lh-{name}-server");
    assert!(Command::new("ip")
        .args(["netns", "add", &ns])
        .status()
        .unwrap()
        .success());
    std::fs::create_dir_all("/run/lasthop/emu").unwrap();
    std::fs::write(
        state_file(&name),
        format!(
            "{{\"name\":\"{name}\",\"pid\":{dead_pid},\"namespaces\":[\"{ns}\",\"lh-{name}-sta0\"],\
             \"nodes\":[],\"started_unix_s\":0,\"pid_start\":1}}\n"
        ),
    )
    .unwrap();
    assert_eq!(
        netns::down(&name).unwrap(),
        format!("removed 1 namespace of emu {name}")
    );
    assert!(namespaces_with_prefix(&format!("lh-{name}-")).is_empty());
    assert!(!state_file(&name).exists());

    // No state file at all, only a leftover namespace.
    let ns = format!("lh-{name}-sta3");
    assert!(Command::new("ip")
        .args(["netns", "add", &ns])
        .status()
        .unwrap()
        .success());
    assert_eq!(
        netns::down(&name).unwrap(),
        format!("removed 1 namespace of emu {name}")
    );
    assert!(namespaces_with_prefix(&format!("lh-{name}-")).is_empty());
    assert_eq!(
        netns::down(&name).unwrap(),
        format!("emu {name} was not up")
    );
}

#[test]
fn second_build_of_a_name_is_refused_while_up() {
    require_os!();
    let name = emu_name("t5");
    let prefix = format!("lh-{name}-");
    let mut first = netns::build(plan(&name, 1, 1500).unwrap()).unwrap();
    let err = netns::build(plan(&name, 1, 1500).unwrap())
        .err()
        .expect("second build must fail");
    assert_eq!(
        err,
        format!(
            "emu {name} is already up (pid {}); `lasthop emu down --name {name}` first",
            std::process::id()
        )
    );
    // The refused build touched nothing of the running one.
    assert_eq!(namespaces_with_prefix(&prefix).len(), 2);
    assert!(state_file(&name).exists());
    first.teardown();
    // Once down, the name is free again.
    let mut again = netns::build(plan(&name, 1, 1500).unwrap()).unwrap();
    again.teardown();
    assert!(namespaces_with_prefix(&prefix).is_empty());
}

/// The AP host: its namespace holds eth0 (10.77.0.2/24) and wlan0 (10.77.0.3/16), forwards
/// IPv4 between them with reverse-path filtering and redirects off, is recorded for `emu exec
/// ap`, and goes with the rest at teardown. A datagram written to its eth0 TUN comes out of its
/// wlan0 TUN (routed by its kernel, TTL one less).
#[test]
fn ap_host_routes_between_its_interfaces() {
    require_os!();
    let name = emu_name("ap");
    let mut b = netns::build(plan(&name, 2, 1500).unwrap().with_ap_host()).unwrap();
    assert_eq!(b.tuns.len(), 5, "server, 2 stations, AP eth0 and wlan0");
    let ap = b.topo.ap.clone().unwrap();
    assert_eq!(ap.netns, format!("lh-{name}-ap"));
    assert!(namespaces_with_prefix(&format!("lh-{name}-")).contains(&ap.netns));
    assert_eq!(netns::netns_for(&name, "ap").unwrap(), ap.netns);
    assert!(ip_in(&ap.netns, &["-4", "-o", "addr", "show", "dev", "eth0"]).contains("inet 10.77.0.2/24"));
    assert!(ip_in(&ap.netns, &["-4", "-o", "addr", "show", "dev", "wlan0"]).contains("inet 10.77.0.3/16"));
    let cat = |key: &str| {
        let o = Command::new("ip").args(["netns", "exec", &ap.netns, "cat", &format!("/proc/sys/net/{key}")]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    assert_eq!(cat("ipv4/ip_forward"), "1");
    assert_eq!(cat("ipv4/conf/all/rp_filter"), "0");
    assert_eq!(cat("ipv4/conf/wlan0/send_redirects"), "0");
    assert_eq!(b.ap_wifi_ifindex, {
        let o = ip_in(&ap.netns, &["-o", "link", "show", "dev", "wlan0"]);
        o.split(':').next().unwrap().trim().parse::<u32>().unwrap()
    });
    // A UDP datagram server → sta1, as the wired leg would deliver it to eth0.
    let mut pkt = vec![0u8; 28 + 5];
    pkt[0] = 0x45;
    let total = pkt.len() as u16;
    pkt[2..4].copy_from_slice(&total.to_be_bytes());
    pkt[8] = 64;
    pkt[9] = 17;
    pkt[12..16].copy_from_slice(&[10, 77, 0, 1]);
    pkt[16..20].copy_from_slice(&[10, 77, 1, 2]);
    let sum = {
        let mut s = 0u32;
        for i in (0..20).step_by(2) {
            s += u16::from_be_bytes([pkt[i], pkt[i + 1]]) as u32;
        }
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        !(s as u16)
    };
    pkt[10..12].copy_from_slice(&sum.to_be_bytes());
    pkt[20..22].copy_from_slice(&4000u16.to_be_bytes());
    pkt[22..24].copy_from_slice(&9u16.to_be_bytes());
    pkt[24..26].copy_from_slice(&13u16.to_be_bytes());
    pkt[28..].copy_from_slice(b"hello");
    assert!(b.tuns[3].send(&pkt).unwrap());
    let mut buf = [0u8; 2048];
    let mut out = None;
    wait_until(Duration::from_secs(2), || {
        if let Some(n) = b.tuns[4].recv(&mut buf).unwrap() {
            out = Some(buf[..n].to_vec());
            return true;
        }
        false
    });
    let out = out.expect("the AP did not route the datagram to wlan0");
    assert_eq!(&out[16..20], &[10, 77, 1, 2]);
    assert_eq!(out[8], 63, "one routed hop");
    assert_eq!(&out[28..], b"hello");
    b.teardown();
    assert!(namespaces_with_prefix(&format!("lh-{name}-")).is_empty());
}
