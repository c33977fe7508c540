//! The split proxy's data path: one thread, epoll, non-blocking sockets.
//!
//! A station's connection arrives at the transparent listener (rules.rs) with its original
//! destination as the accepted socket's local address. The proxy opens the wired side from the
//! station's own address and port (`IP_TRANSPARENT`), each side with its own congestion control
//! (`TCP_CONGESTION`), and then relays:
//!
//! * **downlink** (server → station, the direction Virtual Wires shapes): bytes read from the
//!   wired socket go into the flow's relay buffer (at most `relay_buffer`; when it is full the
//!   proxy stops reading, so the server's window closes), and from it into the WiFi-side socket
//!   as the deciders plan (`SplitProxy::plan_writes`: all there is room for when unmanaged, one
//!   MSS at a time in token order when managed). A WiFi socket's "room" is `sndbuf` minus what
//!   it holds unacknowledged (`written − tcpi_bytes_acked`); its kernel buffer is set larger,
//!   so planned writes are accepted whole.
//! * **uplink** (station → server, never shaped): `splice(2)` through a pipe, no copy. With
//!   `window_clamp`, the WiFi-side sockets carry `TCP_WINDOW_CLAMP` (set on the listener, which
//!   its connections inherit, so the SYN-ACK's window obeys it too): the window a station's
//!   upload sees never exceeds it, so neither does what it has in flight, nor what waits in its
//!   own queue. The kernel does not keep a user's clamp: receive-buffer autotuning raises it
//!   with the buffer (`tcp_rcvbuf_grow`, "make the window clamp follow along"), and since Linux
//!   6.6 `tcp_measure_rcv_mss` resets it to `tcp_win_from_space(sk_rcvbuf)` whenever the
//!   receiver's scaling ratio (payload over memory per skb) changes. So the listener also fixes
//!   `SO_RCVBUF` at half the clamp (the kernel doubles it: a buffer of the clamp's size), which
//!   turns autotuning off for its connections; the window then stays at the clamp before the
//!   first data and at the buffer's payload share after (the scaling ratio times the clamp),
//!   never above. The uplink's bytes leave the socket at once through the pipe; a download's
//!   WiFi side receives only ACKs.
//!
//! Half-closes travel (an EOF on one side becomes `shutdown(SHUT_WR)` on the other once its
//! bytes are written), and so do resets (an error on one side closes the other with
//! `SO_LINGER` 0, which sends a RST). A failed connection to the server resets the station's.

use lasthop_algo::control::vwire::{FlowIo, SplitProxy};
use lasthop_core::Instant as SimInstant;
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

const IP_TRANSPARENT: libc::c_int = 19;
/// IP + TCP headers with timestamps: a segment's IP length is its payload plus this.
pub const HEADERS: u32 = 52;

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn setsockopt<T>(fd: RawFd, level: libc::c_int, opt: libc::c_int, v: &T) -> io::Result<()> {
    // SAFETY: `v` is a valid value of the option's type for its size.
    cvt(unsafe { libc::setsockopt(fd, level, opt, v as *const T as *const libc::c_void, std::mem::size_of::<T>() as libc::socklen_t) }).map(|_| ())
}

fn sockaddr(a: SocketAddrV4) -> libc::sockaddr_in {
    // SAFETY: sockaddr_in is plain data.
    let mut sa: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    sa.sin_family = libc::AF_INET as libc::sa_family_t;
    sa.sin_port = a.port().to_be();
    sa.sin_addr.s_addr = u32::from(*a.ip()).to_be();
    sa
}

fn from_sockaddr(sa: &libc::sockaddr_in) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::from(u32::from_be(sa.sin_addr.s_addr)), u16::from_be(sa.sin_port))
}

fn name_of(fd: RawFd, peer: bool) -> io::Result<SocketAddrV4> {
    // SAFETY: sockaddr_in is plain data, filled by the call.
    let mut sa: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    let p = &mut sa as *mut _ as *mut libc::sockaddr;
    // SAFETY: a valid buffer for an IPv4 address.
    cvt(unsafe { if peer { libc::getpeername(fd, p, &mut len) } else { libc::getsockname(fd, p, &mut len) } })?;
    Ok(from_sockaddr(&sa))
}

fn tcp_socket() -> io::Result<OwnedFd> {
    // SAFETY: socket(2) with constant arguments; owned at once.
    Ok(unsafe { OwnedFd::from_raw_fd(cvt(libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0))?) })
}

/// The transparent listener on `port` (all addresses), with the window clamp if given.
pub fn listener(port: u16, window_clamp: Option<u32>) -> io::Result<OwnedFd> {
    let fd = tcp_socket()?;
    let one: libc::c_int = 1;
    setsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_REUSEADDR, &one)?;
    setsockopt(fd.as_raw_fd(), libc::SOL_IP, IP_TRANSPARENT, &one)?;
    if let Some(c) = window_clamp {
        setsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF, &((c / 2) as libc::c_int))?;
        setsockopt(fd.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP, &(c as libc::c_int))?;
    }
    let sa = sockaddr(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port));
    // SAFETY: a valid sockaddr_in.
    cvt(unsafe { libc::bind(fd.as_raw_fd(), &sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t) })?;
    // SAFETY: listen on our socket.
    cvt(unsafe { libc::listen(fd.as_raw_fd(), 4096) })?;
    Ok(fd)
}

fn set_cc(fd: RawFd, cc: &str) -> io::Result<()> {
    // SAFETY: a byte string and its length.
    cvt(unsafe { libc::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, cc.as_ptr() as *const libc::c_void, cc.len() as libc::socklen_t) }).map(|_| ())
}

/// Whether the kernel offers congestion control `cc` (it may load its module on first use).
pub fn cc_available(cc: &str) -> bool {
    tcp_socket().is_ok_and(|s| set_cc(s.as_raw_fd(), cc).is_ok())
}

/// The kernel's TCP_INFO of a socket.
pub fn tcp_info(fd: RawFd) -> Option<libc::tcp_info> {
    // SAFETY: tcp_info is plain data; the kernel fills up to `len`.
    let mut ti: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: as above.
    let r = unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_INFO, &mut ti as *mut _ as *mut libc::c_void, &mut len) };
    (r == 0).then_some(ti)
}

/// Close `fd` with a RST (SO_LINGER 0).
fn reset(fd: OwnedFd) {
    let l = libc::linger { l_onoff: 1, l_linger: 0 };
    let _ = setsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_LINGER, &l);
    drop(fd);
}

/// A growable ring of bytes (power-of-two capacity up to `cap`).
pub struct Ring {
    buf: Vec<u8>,
    head: usize,
    len: usize,
    cap: usize,
}

impl Ring {
    pub fn new(cap: usize) -> Ring {
        Ring { buf: Vec::new(), head: 0, len: 0, cap }
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn room(&self) -> usize {
        self.cap - self.len
    }
    /// Make `want` more bytes writable if the cap allows (growing keeps the content).
    fn reserve(&mut self, want: usize) {
        let need = (self.len + want).min(self.cap);
        if need <= self.buf.len() {
            return;
        }
        let mut n = self.buf.len().max(16 << 10);
        while n < need {
            n *= 2;
        }
        let n = n.min(self.cap.next_power_of_two());
        let mut nb = vec![0u8; n];
        let (a, b) = self.slices(self.len);
        nb[..a.len()].copy_from_slice(a);
        nb[a.len()..a.len() + b.len()].copy_from_slice(b);
        self.buf = nb;
        self.head = 0;
    }
    /// The first `k` bytes as up to two slices.
    fn slices(&self, k: usize) -> (&[u8], &[u8]) {
        let n = self.buf.len();
        if n == 0 {
            return (&[], &[]);
        }
        let first = (n - self.head).min(k);
        (&self.buf[self.head..self.head + first], &self.buf[..k - first])
    }
    /// The contiguous free region after the content (grown to at least `want` if possible).
    fn tail(&mut self, want: usize) -> &mut [u8] {
        self.reserve(want.min(self.room()));
        let n = self.buf.len();
        if n == 0 {
            return &mut [];
        }
        let start = (self.head + self.len) % n;
        let free = (n - self.len).min(self.cap - self.len);
        let contiguous = if start >= self.head { (n - start).min(free) } else { (self.head - start).min(free) };
        &mut self.buf[start..start + contiguous]
    }
    fn commit(&mut self, k: usize) {
        self.len += k;
    }
    fn consume(&mut self, k: usize) {
        self.head = (self.head + k) % self.buf.len().max(1);
        self.len -= k;
        if self.len == 0 {
            self.head = 0;
            // An idle flow gives its memory back.
            if self.buf.len() > 64 << 10 {
                self.buf = Vec::new();
            }
        }
    }
}

/// Connection parameters.
#[derive(Clone, Debug)]
pub struct RelayConfig {
    pub wired_cc: String,
    pub wifi_cc: String,
    /// Relay buffer per flow (downlink), bytes.
    pub relay_buffer: usize,
    /// What the proxy lets a WiFi-side socket hold unacknowledged, bytes.
    pub sndbuf: u64,
    pub max_conns: usize,
}

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum State {
    Connecting,
    Open,
}

/// One split connection.
pub struct Conn {
    pub id: u64,
    pub client: SocketAddrV4,
    pub server: SocketAddrV4,
    pub slot: Option<usize>,
    wifi: Option<OwnedFd>,
    wired: Option<OwnedFd>,
    state: State,
    down: Ring,
    /// Bytes written into the WiFi-side socket.
    pub written: u64,
    pub wired_eof: bool,
    /// The server reset the connection: the station gets the bytes before the reset, then a
    /// reset (as end to end, where data ahead of a RST is still delivered).
    wired_reset: bool,
    /// When the server's reset came (the station gets at most 5 s to acknowledge the rest).
    wired_reset_at: SimInstant,
    wifi_shut: bool,
    pipe: Option<(OwnedFd, OwnedFd)>,
    pipe_bytes: usize,
    pub wifi_eof: bool,
    wired_shut: bool,
    /// Interest registered for each fd (EPOLLIN/OUT bits).
    wifi_ev: u32,
    wired_ev: u32,
    /// Latest TCP_INFO figures of the WiFi side.
    pub acked: u64,
    pub notsent: u64,
    pub mss: u64,
    pub data_segs_out: u32,
    pub bytes_sent: u64,
    pub srtt_us: u32,
    pub uplink_bytes: u64,
    pub opened_at: SimInstant,
}

impl Conn {
    pub fn outq(&self) -> u64 {
        self.written.saturating_sub(self.acked)
    }
    pub fn unread(&self) -> u64 {
        self.down.len() as u64
    }
    fn done(&self) -> bool {
        self.state == State::Open && self.wifi_shut && self.wired_shut
    }
}

/// Totals for the status line and metrics.
#[derive(Default, Debug, Clone, Copy)]
pub struct RelayStats {
    pub accepted: u64,
    pub closed: u64,
    pub resets: u64,
    pub connect_failures: u64,
    pub refused_full: u64,
    pub down_bytes: u64,
    pub up_bytes: u64,
}

/// Token a connection's fd carries in epoll: id << 1 | side (0 wifi, 1 wired); the listener 0.
const LISTENER: u64 = u64::MAX;

pub struct Relay {
    cfg: RelayConfig,
    epfd: OwnedFd,
    listener: OwnedFd,
    pub conns: std::collections::BTreeMap<u64, Conn>,
    next_id: u64,
    pub stats: RelayStats,
    events: Vec<libc::epoll_event>,
    buf_sndbuf: libc::c_int,
    /// Connections accepted since the host last looked (it gives them slots).
    pub new_conns: Vec<u64>,
    /// Slots of connections that ended since the host last looked (it frees them).
    pub closed_slots: Vec<usize>,
}

fn ep_ctl(epfd: RawFd, op: libc::c_int, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
    let mut ev = libc::epoll_event { events, u64: token };
    // SAFETY: a valid epoll fd, fd and event.
    cvt(unsafe { libc::epoll_ctl(epfd, op, fd, &mut ev) }).map(|_| ())
}

const IN: u32 = libc::EPOLLIN as u32;
/// Interest value of a side removed from epoll.
const DEAD: u32 = u32::MAX;
const OUT: u32 = libc::EPOLLOUT as u32;

impl Relay {
    pub fn new(cfg: RelayConfig, listener: OwnedFd) -> io::Result<Relay> {
        // SAFETY: epoll_create1 with a flag; owned at once.
        let epfd = unsafe { OwnedFd::from_raw_fd(cvt(libc::epoll_create1(libc::EPOLL_CLOEXEC))?) };
        ep_ctl(epfd.as_raw_fd(), libc::EPOLL_CTL_ADD, listener.as_raw_fd(), IN, LISTENER)?;
        let buf_sndbuf = (cfg.sndbuf.saturating_mul(2)).min(i32::MAX as u64 / 2) as libc::c_int;
        Ok(Relay { cfg, epfd, listener, conns: Default::default(), next_id: 1, stats: RelayStats::default(), events: vec![libc::epoll_event { events: 0, u64: 0 }; 256], buf_sndbuf, new_conns: Vec::new(), closed_slots: Vec::new() })
    }

    /// Wait for events at most `timeout_ms` and handle them. New connections are listed in
    /// `new_conns` (without a slot until the host gives them one: unmanaged until then), the
    /// slots of ended ones in `closed_slots`.
    pub fn poll(&mut self, timeout_ms: i32, now: SimInstant) {
        // SAFETY: a valid buffer of epoll_event for its length.
        let n = unsafe { libc::epoll_wait(self.epfd.as_raw_fd(), self.events.as_mut_ptr(), self.events.len() as libc::c_int, timeout_ms) };
        if n <= 0 {
            return;
        }
        let evs: Vec<(u32, u64)> = self.events[..n as usize].iter().map(|e| (e.events, e.u64)).collect();
        for (ev, token) in evs {
            if token == LISTENER {
                self.accept_all(now);
                continue;
            }
            let (id, wired) = (token >> 1, token & 1 == 1);
            if !self.conns.contains_key(&id) {
                continue;
            }
            let ok = if wired { self.on_wired(id, ev, now) } else { self.on_wifi(id, ev) };
            if !ok || self.conns.get(&id).is_some_and(Conn::done) {
                self.finish(id);
            } else {
                self.update_interest(id);
            }
        }
    }

    fn accept_all(&mut self, now: SimInstant) {
        loop {
            // SAFETY: accept4 on our listener; no peer address wanted here.
            let fd = unsafe { libc::accept4(self.listener.as_raw_fd(), std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) };
            if fd < 0 {
                return;
            }
            // SAFETY: a new descriptor we own.
            let wifi = unsafe { OwnedFd::from_raw_fd(fd) };
            if self.conns.len() >= self.cfg.max_conns {
                self.stats.refused_full += 1;
                reset(wifi);
                continue;
            }
            let (Ok(client), Ok(server)) = (name_of(fd, true), name_of(fd, false)) else {
                reset(wifi);
                continue;
            };
            self.stats.accepted += 1;
            match self.connect_upstream(client, server) {
                Ok(wired) => {
                    let _ = set_cc(fd, &self.cfg.wifi_cc);
                    let _ = setsockopt(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, &self.buf_sndbuf);
                    let id = self.next_id;
                    self.next_id += 1;
                    let pipe = make_pipe().ok();
                    let c = Conn {
                        id,
                        client,
                        server,
                        slot: None,
                        wifi: Some(wifi),
                        wired: Some(wired),
                        state: State::Connecting,
                        down: Ring::new(self.cfg.relay_buffer),
                        written: 0,
                        wired_eof: false,
                        wired_reset: false,
                        wired_reset_at: SimInstant::ZERO,
                        wifi_shut: false,
                        pipe,
                        pipe_bytes: 0,
                        wifi_eof: false,
                        wired_shut: false,
                        wifi_ev: 0,
                        wired_ev: 0,
                        acked: 0,
                        notsent: 0,
                        mss: 1448,
                        data_segs_out: 0,
                        bytes_sent: 0,
                        srtt_us: 0,
                        uplink_bytes: 0,
                        opened_at: now,
                    };
                    let (wfd, dfd) = (c.wifi.as_ref().map(|f| f.as_raw_fd()), c.wired.as_ref().map(|f| f.as_raw_fd()));
                    self.conns.insert(id, c);
                    let ep = self.epfd.as_raw_fd();
                    let a = ep_ctl(ep, libc::EPOLL_CTL_ADD, wfd.expect("wifi"), 0, id << 1);
                    let b = ep_ctl(ep, libc::EPOLL_CTL_ADD, dfd.expect("wired"), OUT, (id << 1) | 1);
                    if a.is_err() || b.is_err() {
                        let c = self.conns.remove(&id).expect("just inserted");
                        drop(c);
                        continue;
                    }
                    self.conns.get_mut(&id).expect("just inserted").wired_ev = OUT;
                    self.new_conns.push(id);
                }
                Err(_) => {
                    self.stats.connect_failures += 1;
                    reset(wifi);
                }
            }
        }
    }

    fn connect_upstream(&self, client: SocketAddrV4, server: SocketAddrV4) -> io::Result<OwnedFd> {
        let s = tcp_socket()?;
        let fd = s.as_raw_fd();
        let one: libc::c_int = 1;
        setsockopt(fd, libc::SOL_IP, IP_TRANSPARENT, &one)?;
        setsockopt(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, &one)?;
        let _ = set_cc(fd, &self.cfg.wired_cc);
        // The station's own address and port: the server sees the station's 5-tuple.
        let bind = |a: SocketAddrV4| {
            let sa = sockaddr(a);
            // SAFETY: a valid sockaddr_in.
            cvt(unsafe { libc::bind(fd, &sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t) })
        };
        if bind(client).is_err() {
            bind(SocketAddrV4::new(*client.ip(), 0))?;
        }
        let sa = sockaddr(server);
        // SAFETY: a valid sockaddr_in.
        let r = unsafe { libc::connect(fd, &sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINPROGRESS) {
                return Err(e);
            }
        }
        Ok(s)
    }

    /// Wired-side event: connected, downlink data, uplink room.
    fn on_wired(&mut self, id: u64, ev: u32, now: SimInstant) -> bool {
        let c = self.conns.get_mut(&id).expect("live conn");
        let fd = c.wired.as_ref().expect("wired fd").as_raw_fd();
        if c.state == State::Connecting {
            if ev & (OUT | libc::EPOLLERR as u32 | libc::EPOLLHUP as u32) == 0 {
                return true;
            }
            let mut err: libc::c_int = 0;
            let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
            // SAFETY: an int option.
            unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_ERROR, &mut err as *mut _ as *mut libc::c_void, &mut len) };
            if err != 0 {
                self.stats.connect_failures += 1;
                return false;
            }
            c.state = State::Open;
        }
        if ev & IN != 0 && !c.wired_eof {
            loop {
                let room = c.down.room();
                if room == 0 {
                    break;
                }
                let t = c.down.tail(room.min(256 << 10));
                if t.is_empty() {
                    break;
                }
                // SAFETY: a writable buffer of its length.
                let n = unsafe { libc::read(fd, t.as_mut_ptr() as *mut libc::c_void, t.len()) };
                if n > 0 {
                    c.down.commit(n as usize);
                    self.stats.down_bytes += n as u64;
                    continue;
                }
                if n == 0 {
                    c.wired_eof = true;
                    break;
                }
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::WouldBlock {
                    break;
                }
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                // Reset by the server: deliver what came before it, then reset the station.
                c.wired_eof = true;
                c.wired_reset = true;
                c.wired_reset_at = now;
                break;
            }
        }
        if c.state == State::Open && c.pipe_bytes > 0 && !flush_pipe(c) {
            self.stats.resets += 1;
            return false;
        }
        Self::propagate_shutdowns(c);
        true
    }

    /// WiFi-side event: uplink data (spliced to the wired side).
    fn on_wifi(&mut self, id: u64, ev: u32) -> bool {
        let c = self.conns.get_mut(&id).expect("live conn");
        if ev & (libc::EPOLLERR as u32) != 0 && ev & IN == 0 {
            self.stats.resets += 1;
            return false;
        }
        if ev & IN != 0 && !c.wifi_eof && c.pipe_bytes == 0 {
            let Some((pr, pw)) = c.pipe.as_ref() else { return false };
            let (pr, pw) = (pr.as_raw_fd(), pw.as_raw_fd());
            let wfd = c.wifi.as_ref().expect("wifi fd").as_raw_fd();
            // SAFETY: splice between our socket and pipe.
            let n = unsafe { libc::splice(wfd, std::ptr::null_mut(), pw, std::ptr::null_mut(), 1 << 16, libc::SPLICE_F_NONBLOCK | libc::SPLICE_F_MOVE) };
            let _ = pr;
            if n > 0 {
                c.pipe_bytes += n as usize;
                c.uplink_bytes += n as u64;
                self.stats.up_bytes += n as u64;
            } else if n == 0 {
                c.wifi_eof = true;
            } else {
                let e = io::Error::last_os_error();
                if !matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) {
                    self.stats.resets += 1;
                    return false;
                }
            }
            if c.state == State::Open && c.pipe_bytes > 0 && !flush_pipe(c) {
                self.stats.resets += 1;
                return false;
            }
        }
        Self::propagate_shutdowns(c);
        true
    }

    /// EOFs become shutdowns on the other side once the bytes before them are through.
    fn propagate_shutdowns(c: &mut Conn) {
        if c.state != State::Open {
            return;
        }
        if c.wired_eof && !c.wired_reset && c.down.is_empty() && !c.wifi_shut {
            if let Some(f) = c.wifi.as_ref() {
                // SAFETY: shutdown on our socket.
                unsafe { libc::shutdown(f.as_raw_fd(), libc::SHUT_WR) };
            }
            c.wifi_shut = true;
        }
        if c.wifi_eof && c.pipe_bytes == 0 && !c.wired_shut {
            if let Some(f) = c.wired.as_ref() {
                // SAFETY: shutdown on our socket.
                unsafe { libc::shutdown(f.as_raw_fd(), libc::SHUT_WR) };
            }
            c.wired_shut = true;
        }
    }

    fn update_interest(&mut self, id: u64) {
        let ep = self.epfd.as_raw_fd();
        let Some(c) = self.conns.get_mut(&id) else { return };
        let want_wired = match c.state {
            State::Connecting => OUT,
            State::Open => (if !c.wired_eof && c.down.room() > 0 { IN } else { 0 }) | (if c.pipe_bytes > 0 { OUT } else { 0 }),
        };
        let want_wifi = if c.state == State::Open && !c.wifi_eof && c.pipe_bytes == 0 { IN } else { 0 };
        // A side that has nothing more to say in either direction leaves epoll (it would
        // report EPOLLHUP for ever); `DEAD` marks it.
        let wired_over = c.state == State::Open && (c.wired_reset || (c.wired_eof && c.wired_shut && c.pipe_bytes == 0));
        let wifi_over = c.state == State::Open && c.wifi_eof && c.wifi_shut;
        for (over, want, cur, fd, tok) in [(wired_over, want_wired, &mut c.wired_ev, c.wired.as_ref(), (id << 1) | 1), (wifi_over, want_wifi, &mut c.wifi_ev, c.wifi.as_ref(), id << 1)] {
            let Some(f) = fd else { continue };
            if *cur == DEAD {
                continue;
            }
            if over {
                let _ = ep_ctl(ep, libc::EPOLL_CTL_DEL, f.as_raw_fd(), 0, tok);
                *cur = DEAD;
            } else if want != *cur {
                let _ = ep_ctl(ep, libc::EPOLL_CTL_MOD, f.as_raw_fd(), want, tok);
                *cur = want;
            }
        }
    }

    /// Close connection `id`: orderly if both directions finished, else with a RST on both
    /// sides (an error on one side resets the other, as end to end it would).
    fn finish(&mut self, id: u64) {
        let Some(mut c) = self.conns.remove(&id) else { return };
        if let Some(s) = c.slot {
            self.closed_slots.push(s);
        }
        let orderly = c.done();
        for f in [c.wifi.take(), c.wired.take()].into_iter().flatten() {
            if orderly {
                drop(f);
            } else {
                reset(f);
            }
        }
        self.stats.closed += 1;
    }

    /// Refresh each open connection's WiFi-side figures (TCP_INFO); returns Σ outq.
    pub fn refresh(&mut self) -> u64 {
        let mut sum = 0;
        for c in self.conns.values_mut() {
            if c.state != State::Open {
                continue;
            }
            if let Some(ti) = c.wifi.as_ref().and_then(|f| tcp_info(f.as_raw_fd())) {
                c.acked = ti.tcpi_bytes_acked;
                c.notsent = ti.tcpi_notsent_bytes as u64;
                if ti.tcpi_snd_mss > 0 {
                    c.mss = ti.tcpi_snd_mss as u64;
                }
                c.srtt_us = ti.tcpi_rtt;
                c.data_segs_out = ti.tcpi_data_segs_out;
                c.bytes_sent = ti.tcpi_bytes_sent;
            }
            sum += c.outq();
        }
        sum
    }

    /// Write relay bytes into the WiFi-side sockets as the deciders plan it; connections
    /// without a slot are written unmanaged. Closes what finished.
    pub fn pump(&mut self, now: SimInstant, proxy: &mut SplitProxy) {
        let sndbuf = self.cfg.sndbuf;
        let mut io: Vec<FlowIo> = Vec::new();
        let mut ids: Vec<(usize, u64)> = Vec::new();
        let mut free: Vec<u64> = Vec::new();
        for c in self.conns.values() {
            if c.state != State::Open || c.down.is_empty() && c.slot.is_none() {
                continue;
            }
            let in_flight = c.outq().saturating_sub(c.notsent);
            match c.slot {
                Some(s) => {
                    io.push(FlowIo { slot: s, unread: c.unread(), outq: c.outq(), in_flight, sndbuf, mss: c.mss });
                    ids.push((s, c.id));
                }
                None => free.push(c.id),
            }
        }
        let mut plan = Vec::new();
        if !io.is_empty() {
            proxy.plan_writes(now, &mut io, &mut plan);
        }
        let mut dead = Vec::new();
        for (slot, k) in plan {
            let id = ids.iter().find(|x| x.0 == slot).expect("planned slot").1;
            if !self.write_down(id, k as usize) {
                dead.push(id);
            }
        }
        for id in free {
            let c = &self.conns[&id];
            let k = c.unread().min(sndbuf.saturating_sub(c.outq())) as usize;
            if k > 0 && !self.write_down(id, k) {
                dead.push(id);
            }
        }
        let all: Vec<u64> = self.conns.keys().copied().collect();
        for id in all {
            if dead.contains(&id) {
                self.stats.resets += 1;
                self.finish(id);
                continue;
            }
            let c = self.conns.get_mut(&id).expect("live");
            Self::propagate_shutdowns(c);
            // A server's reset reaches the station once the bytes before it are acknowledged.
            if c.wired_reset && ((c.down.is_empty() && c.outq() == 0) || now.saturating_since(c.wired_reset_at) > lasthop_core::Duration::from_secs(5)) {
                self.stats.resets += 1;
                self.finish(id);
                continue;
            }
            if c.done() {
                self.finish(id);
            } else {
                self.update_interest(id);
            }
        }
    }

    /// Write up to `k` relay bytes of `id` into its WiFi-side socket; false on a socket error.
    fn write_down(&mut self, id: u64, k: usize) -> bool {
        let c = self.conns.get_mut(&id).expect("live conn");
        let fd = c.wifi.as_ref().expect("wifi fd").as_raw_fd();
        let mut left = k.min(c.down.len());
        while left > 0 {
            let (a, b) = c.down.slices(left);
            let iov = [libc::iovec { iov_base: a.as_ptr() as *mut libc::c_void, iov_len: a.len() }, libc::iovec { iov_base: b.as_ptr() as *mut libc::c_void, iov_len: b.len() }];
            // SAFETY: iovecs over our ring's content.
            let n = unsafe { libc::writev(fd, iov.as_ptr(), if b.is_empty() { 1 } else { 2 }) };
            if n > 0 {
                c.down.consume(n as usize);
                c.written += n as u64;
                left -= n as usize;
                continue;
            }
            let e = io::Error::last_os_error();
            return matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted);
        }
        true
    }
}

fn make_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: a valid array of two ints.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) })?;
    // SAFETY: new descriptors we own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Splice the pipe's bytes into the wired socket; false on a socket error.
fn flush_pipe(c: &mut Conn) -> bool {
    let Some((pr, _)) = c.pipe.as_ref() else { return false };
    let Some(wired) = c.wired.as_ref() else { return false };
    while c.pipe_bytes > 0 {
        // SAFETY: splice from our pipe to our socket.
        let n = unsafe { libc::splice(pr.as_raw_fd(), std::ptr::null_mut(), wired.as_raw_fd(), std::ptr::null_mut(), c.pipe_bytes, libc::SPLICE_F_NONBLOCK | libc::SPLICE_F_MOVE) };
        if n > 0 {
            c.pipe_bytes -= n as usize;
            continue;
        }
        let e = io::Error::last_os_error();
        return matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_wraps_grows_and_shrinks() {
        let mut r = Ring::new(100_000);
        let mut fed = 0u8;
        let mut seen = 0u8;
        for round in 0..50 {
            // Write a few thousand bytes, read some back, check order.
            let mut want = 3000 + round * 131;
            while want > 0 && r.room() > 0 {
                let t = r.tail(want);
                let k = t.len().min(want);
                for b in t[..k].iter_mut() {
                    *b = fed;
                    fed = fed.wrapping_add(1);
                }
                r.commit(k);
                want -= k;
            }
            let take = r.len() / 2 + 1;
            let (a, b) = r.slices(take.min(r.len()));
            for &x in a.iter().chain(b) {
                assert_eq!(x, seen);
                seen = seen.wrapping_add(1);
            }
            let n = a.len() + b.len();
            r.consume(n);
        }
        assert!(r.len() <= 100_000);
        let n = r.len();
        let (a, b) = r.slices(n);
        assert_eq!(a.len() + b.len(), n);
        r.consume(n);
        assert!(r.is_empty() && r.buf.len() <= 64 << 10);
    }
}
