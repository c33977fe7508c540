//! Netlink messages, written from netlink(7), rtnetlink(7), genetlink and the UAPI headers
//! (`linux/netlink.h`, `linux/genetlink.h`, `linux/rtnetlink.h`, `linux/nl80211.h`): one
//! encoder and decoder for both ends of a conversation, so the emulator's AP host answers
//! nl80211 requests with the very bytes a kernel would, and a daemon reads them with the code
//! it uses against a real kernel (`socket.rs` holds the two transports).
//!
//! * [`Msg`]: one message — `struct nlmsghdr` (16 octets: length, type, flags, sequence,
//!   port id) and its payload; [`parse_msgs`] splits a datagram into messages.
//! * [`AttrWriter`] / [`Attrs`]: `struct nlattr` TLVs (length, type, payload padded to 4
//!   octets), nested attributes by the `NLA_F_NESTED` bit or by position.
//! * [`genl`]: the generic-netlink header and the controller (family name → id).
//! * [`nl80211`]: station dump, survey dump, wiphy TXQ limit and statistics, interfaces, and
//!   the lasthop vendor extension (A-MPDU length in use).
//! * [`rtnl`]: links (`txqueuelen`) and root queue disciplines (their packet limit and
//!   statistics).
//!
//! Parsing never panics on hostile bytes: every length is checked, and a malformed message is
//! an `Err` with one line saying what was wrong.

pub mod genl;
pub mod nl80211;
pub mod rtnl;
pub mod socket;

/// `NLMSG_ERROR`: an error or, with error 0, an acknowledgement.
pub const NLMSG_ERROR: u16 = 2;
/// `NLMSG_DONE`: the end of a multi-part dump.
pub const NLMSG_DONE: u16 = 3;
pub const NLM_F_REQUEST: u16 = 1;
pub const NLM_F_MULTI: u16 = 2;
pub const NLM_F_ACK: u16 = 4;
/// `NLM_F_ROOT | NLM_F_MATCH`.
pub const NLM_F_DUMP: u16 = 0x300;
pub const NLM_F_REPLACE: u16 = 0x100;
pub const NLM_F_EXCL: u16 = 0x200;
pub const NLM_F_CREATE: u16 = 0x400;
/// In an `NLMSG_ERROR`: the request was not echoed back (`NETLINK_CAP_ACK`).
pub const NLM_F_CAPPED: u16 = 0x100;
/// In an `NLMSG_ERROR`: extended-ACK attributes follow.
pub const NLM_F_ACK_TLVS: u16 = 0x200;
/// `NLMSGERR_ATTR_MSG`: the kernel's error text.
const NLMSGERR_ATTR_MSG: u16 = 1;

/// `NLA_F_NESTED` and `NLA_F_NET_BYTEORDER` live in the top bits of an attribute's type.
pub const NLA_F_NESTED: u16 = 0x8000;
const NLA_TYPE_MASK: u16 = 0x3fff;

pub const NLMSG_HDRLEN: usize = 16;
const NLA_HDRLEN: usize = 4;

#[inline]
fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// One netlink message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Msg {
    pub ty: u16,
    pub flags: u16,
    pub seq: u32,
    pub pid: u32,
    /// Everything after `struct nlmsghdr` (family header and attributes).
    pub payload: Vec<u8>,
}

impl Msg {
    pub fn new(ty: u16, flags: u16, seq: u32, payload: Vec<u8>) -> Msg {
        Msg { ty, flags, seq, pid: 0, payload }
    }

    /// Append the message, header first, padded to 4 octets, to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let len = NLMSG_HDRLEN + self.payload.len();
        out.extend_from_slice(&(len as u32).to_ne_bytes());
        out.extend_from_slice(&self.ty.to_ne_bytes());
        out.extend_from_slice(&self.flags.to_ne_bytes());
        out.extend_from_slice(&self.seq.to_ne_bytes());
        out.extend_from_slice(&self.pid.to_ne_bytes());
        out.extend_from_slice(&self.payload);
        out.resize(out.len() + align4(len) - len, 0);
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(NLMSG_HDRLEN + self.payload.len() + 4);
        self.encode_into(&mut v);
        v
    }

    /// An `NLMSG_ERROR` answering `req`: `errno` 0 is an acknowledgement. The request's
    /// header is echoed (without its payload, as with `NETLINK_CAP_ACK`), and a non-empty
    /// `text` travels as `NLMSGERR_ATTR_MSG`.
    pub fn error_for(req: &Msg, errno: i32, text: &str) -> Msg {
        let mut p = Vec::with_capacity(32 + text.len());
        p.extend_from_slice(&(-errno).to_ne_bytes());
        let echo = Msg { ty: req.ty, flags: req.flags, seq: req.seq, pid: req.pid, payload: Vec::new() };
        let mut hdr = echo.encode();
        // The echoed header carries the original length field.
        hdr[0..4].copy_from_slice(&((NLMSG_HDRLEN + req.payload.len()) as u32).to_ne_bytes());
        p.extend_from_slice(&hdr);
        let mut flags = NLM_F_CAPPED;
        if !text.is_empty() {
            let mut w = AttrWriter::new();
            w.str(NLMSGERR_ATTR_MSG, text);
            p.extend_from_slice(&w.finish());
            flags |= NLM_F_ACK_TLVS;
        }
        Msg { ty: NLMSG_ERROR, flags, seq: req.seq, pid: req.pid, payload: p }
    }

    /// `NLMSG_DONE` ending a dump answering `req`.
    pub fn done_for(req: &Msg) -> Msg {
        Msg { ty: NLMSG_DONE, flags: NLM_F_MULTI, seq: req.seq, pid: req.pid, payload: 0i32.to_ne_bytes().to_vec() }
    }

    /// For an `NLMSG_ERROR`: the error number (0 = acknowledgement) and the kernel's text.
    pub fn error(&self) -> Result<(i32, Option<String>), String> {
        if self.ty != NLMSG_ERROR {
            return Err(format!("message type {} is not NLMSG_ERROR", self.ty));
        }
        let p = &self.payload;
        if p.len() < 4 {
            return Err("NLMSG_ERROR shorter than its error number".into());
        }
        let errno = -i32::from_ne_bytes(p[0..4].try_into().expect("4 octets"));
        let mut text = None;
        if self.flags & NLM_F_ACK_TLVS != 0 && p.len() >= 4 + NLMSG_HDRLEN {
            // After the echoed request: its header only (capped) or the whole message.
            let echoed_len = u32::from_ne_bytes(p[4..8].try_into().expect("4 octets")) as usize;
            let skip = if self.flags & NLM_F_CAPPED != 0 { NLMSG_HDRLEN } else { align4(echoed_len) };
            if let Some(tlvs) = p.get(4 + skip..) {
                for a in Attrs::new(tlvs) {
                    let a = a?;
                    if a.ty == NLMSGERR_ATTR_MSG {
                        text = Some(a.str()?.to_string());
                    }
                }
            }
        }
        Ok((errno, text))
    }
}

/// Split a datagram into messages. A message whose length field is impossible ends the
/// parse with an error.
pub fn parse_msgs(buf: &[u8]) -> Result<Vec<Msg>, String> {
    let mut out = Vec::new();
    let mut off = 0;
    while off + NLMSG_HDRLEN <= buf.len() {
        let len = u32::from_ne_bytes(buf[off..off + 4].try_into().expect("4 octets")) as usize;
        if len < NLMSG_HDRLEN || off + len > buf.len() {
            return Err(format!("netlink message length {len} at offset {off} of a {}-octet datagram", buf.len()));
        }
        let h = &buf[off..off + NLMSG_HDRLEN];
        out.push(Msg {
            ty: u16::from_ne_bytes([h[4], h[5]]),
            flags: u16::from_ne_bytes([h[6], h[7]]),
            seq: u32::from_ne_bytes(h[8..12].try_into().expect("4 octets")),
            pid: u32::from_ne_bytes(h[12..16].try_into().expect("4 octets")),
            payload: buf[off + NLMSG_HDRLEN..off + len].to_vec(),
        });
        off += align4(len);
    }
    if off < buf.len() && buf.len() - off >= NLMSG_HDRLEN {
        return Err(format!("{} trailing octets after the last netlink message", buf.len() - off));
    }
    Ok(out)
}

/// Writes attributes into a buffer; nests are opened and closed like brackets.
#[derive(Default)]
pub struct AttrWriter {
    buf: Vec<u8>,
    open: Vec<usize>,
}

impl AttrWriter {
    pub fn new() -> AttrWriter {
        AttrWriter::default()
    }

    /// A writer that continues after `prefix` (a family header), which is kept as is.
    pub fn with_header(prefix: &[u8]) -> AttrWriter {
        AttrWriter { buf: prefix.to_vec(), open: Vec::new() }
    }

    pub fn bytes(&mut self, ty: u16, data: &[u8]) -> &mut Self {
        let len = NLA_HDRLEN + data.len();
        self.buf.extend_from_slice(&(len as u16).to_ne_bytes());
        self.buf.extend_from_slice(&ty.to_ne_bytes());
        self.buf.extend_from_slice(data);
        self.buf.resize(self.buf.len() + align4(len) - len, 0);
        self
    }
    pub fn flag(&mut self, ty: u16) -> &mut Self {
        self.bytes(ty, &[])
    }
    pub fn u8(&mut self, ty: u16, v: u8) -> &mut Self {
        self.bytes(ty, &[v])
    }
    pub fn u16(&mut self, ty: u16, v: u16) -> &mut Self {
        self.bytes(ty, &v.to_ne_bytes())
    }
    pub fn u32(&mut self, ty: u16, v: u32) -> &mut Self {
        self.bytes(ty, &v.to_ne_bytes())
    }
    pub fn u64(&mut self, ty: u16, v: u64) -> &mut Self {
        self.bytes(ty, &v.to_ne_bytes())
    }
    /// A 64-bit value as the kernel's `nla_put_u64_64bit` writes it: an empty pad attribute of
    /// type `pad` first when that aligns the payload to 8 octets.
    pub fn u64_aligned(&mut self, ty: u16, v: u64, pad: u16) -> &mut Self {
        if (self.buf.len() + NLA_HDRLEN) & 7 != 0 {
            self.flag(pad);
        }
        self.u64(ty, v)
    }
    pub fn i8(&mut self, ty: u16, v: i8) -> &mut Self {
        self.bytes(ty, &v.to_ne_bytes())
    }
    /// A NUL-terminated string.
    pub fn str(&mut self, ty: u16, s: &str) -> &mut Self {
        let mut v = Vec::with_capacity(s.len() + 1);
        v.extend_from_slice(s.as_bytes());
        v.push(0);
        self.bytes(ty, &v)
    }
    /// Open a nested attribute (`NLA_F_NESTED` is set only if `flag_nested`: the kernel sets
    /// it on some nests and not on others, and decoders must accept both).
    pub fn begin(&mut self, ty: u16, flag_nested: bool) -> &mut Self {
        self.open.push(self.buf.len());
        self.buf.extend_from_slice(&0u16.to_ne_bytes());
        let t = if flag_nested { ty | NLA_F_NESTED } else { ty };
        self.buf.extend_from_slice(&t.to_ne_bytes());
        self
    }
    pub fn end(&mut self) -> &mut Self {
        let start = self.open.pop().expect("end() without begin()");
        let len = self.buf.len() - start;
        self.buf[start..start + 2].copy_from_slice(&(len as u16).to_ne_bytes());
        self
    }
    pub fn finish(self) -> Vec<u8> {
        assert!(self.open.is_empty(), "unclosed nested attribute");
        self.buf
    }
}

/// One attribute: its type (flags masked off) and payload.
#[derive(Clone, Copy, Debug)]
pub struct Attr<'a> {
    pub ty: u16,
    pub nested_flag: bool,
    pub data: &'a [u8],
}

impl<'a> Attr<'a> {
    fn fixed<const N: usize>(&self, what: &str) -> Result<[u8; N], String> {
        self.data.get(..N).and_then(|d| d.try_into().ok()).ok_or_else(|| format!("attribute {} ({what}): {} octets, {N} expected", self.ty, self.data.len()))
    }
    pub fn u8(&self) -> Result<u8, String> {
        Ok(self.fixed::<1>("u8")?[0])
    }
    pub fn u16(&self) -> Result<u16, String> {
        Ok(u16::from_ne_bytes(self.fixed("u16")?))
    }
    pub fn u32(&self) -> Result<u32, String> {
        Ok(u32::from_ne_bytes(self.fixed("u32")?))
    }
    pub fn u64(&self) -> Result<u64, String> {
        Ok(u64::from_ne_bytes(self.fixed("u64")?))
    }
    pub fn i8(&self) -> Result<i8, String> {
        Ok(self.u8()? as i8)
    }
    /// A string, with or without its terminating NUL; invalid UTF-8 is an error.
    pub fn str(&self) -> Result<&'a str, String> {
        let d = self.data;
        let d = match d.iter().position(|&b| b == 0) {
            Some(i) => &d[..i],
            None => d,
        };
        std::str::from_utf8(d).map_err(|_| format!("attribute {}: not UTF-8", self.ty))
    }
    /// The attributes nested inside this one.
    pub fn nested(&self) -> Attrs<'a> {
        Attrs::new(self.data)
    }
}

/// Iterates over the attributes of a buffer; a malformed one yields `Err` and ends the walk.
#[derive(Clone)]
pub struct Attrs<'a> {
    buf: &'a [u8],
    off: usize,
    failed: bool,
}

impl<'a> Attrs<'a> {
    pub fn new(buf: &'a [u8]) -> Attrs<'a> {
        Attrs { buf, off: 0, failed: false }
    }

    /// The first attribute of type `ty`, if any (a malformed buffer is an error).
    pub fn find(&self, ty: u16) -> Result<Option<Attr<'a>>, String> {
        for a in self.clone() {
            let a = a?;
            if a.ty == ty {
                return Ok(Some(a));
            }
        }
        Ok(None)
    }
}

impl<'a> Iterator for Attrs<'a> {
    type Item = Result<Attr<'a>, String>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.off + NLA_HDRLEN > self.buf.len() {
            return None;
        }
        let b = &self.buf[self.off..];
        let len = u16::from_ne_bytes([b[0], b[1]]) as usize;
        let ty = u16::from_ne_bytes([b[2], b[3]]);
        if len < NLA_HDRLEN || len > b.len() {
            self.failed = true;
            return Some(Err(format!("attribute length {len} at offset {} of {}", self.off, self.buf.len())));
        }
        self.off += align4(len).min(b.len());
        Some(Ok(Attr { ty: ty & NLA_TYPE_MASK, nested_flag: ty & NLA_F_NESTED != 0, data: &b[NLA_HDRLEN..len] }))
    }
}

/// A `errno` value as text (strerror), for one-line errors.
pub fn errno_text(errno: i32) -> String {
    std::io::Error::from_raw_os_error(errno).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_round_trip_with_nests_and_padding() {
        let mut w = AttrWriter::new();
        w.u8(1, 7).str(2, "phy0").begin(3, true).u32(1, 0xdead_beef).u64_aligned(2, 1 << 40, 9).end().u16(4, 513);
        let buf = w.finish();
        assert_eq!(buf.len() % 4, 0);
        let attrs: Vec<_> = Attrs::new(&buf).collect::<Result<_, _>>().unwrap();
        assert_eq!(attrs.len(), 4);
        assert_eq!(attrs[0].u8().unwrap(), 7);
        assert_eq!(attrs[1].str().unwrap(), "phy0");
        assert!(attrs[2].nested_flag);
        let inner: Vec<_> = attrs[2].nested().collect::<Result<_, _>>().unwrap();
        assert_eq!(inner[0].u32().unwrap(), 0xdead_beef);
        // The pad attribute (type 9) may precede the 64-bit value.
        let v = inner.iter().find(|a| a.ty == 2).unwrap();
        assert_eq!(v.u64().unwrap(), 1 << 40);
        assert_eq!(attrs[3].u16().unwrap(), 513);
    }

    #[test]
    fn u64_payloads_are_8_aligned_within_the_message() {
        // A 4-octet genl header then an attribute: the value must start at a multiple of 8.
        let mut w = AttrWriter::with_header(&[1, 1, 0, 0]);
        w.u64_aligned(5, 42, 9);
        let buf = w.finish();
        let pos = buf.windows(8).position(|x| x == 42u64.to_ne_bytes()).unwrap();
        assert_eq!((pos + NLMSG_HDRLEN) % 8, 0);
    }

    #[test]
    fn messages_split_and_errors_decode() {
        let req = Msg::new(30, NLM_F_REQUEST | NLM_F_ACK, 77, vec![1, 2, 3, 4]);
        let err = Msg::error_for(&req, libc::EOPNOTSUPP, "no such thing");
        let ack = Msg::error_for(&req, 0, "");
        let mut d = err.encode();
        ack.encode_into(&mut d);
        let msgs = parse_msgs(&d).unwrap();
        assert_eq!(msgs.len(), 2);
        assert_eq!(msgs[0].error().unwrap(), (libc::EOPNOTSUPP, Some("no such thing".into())));
        assert_eq!(msgs[1].error().unwrap(), (0, None));
        assert_eq!(msgs[0].seq, 77);
    }

    #[test]
    fn hostile_bytes_are_errors_not_panics() {
        assert!(parse_msgs(&[0xff; 20]).is_err());
        assert!(parse_msgs(&[8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).is_err());
        let bad = [200u8, 0, 1, 0, 0, 0];
        let r: Vec<_> = Attrs::new(&bad).collect();
        assert_eq!(r.len(), 1);
        assert!(r[0].is_err());
        let short = [5u8, 0, 1, 0, 9];
        let a = Attrs::new(&short).next().unwrap().unwrap();
        assert!(a.u32().is_err());
        assert_eq!(a.u8().unwrap(), 9);
        // Every prefix of a valid buffer parses or errs without panicking.
        let mut w = AttrWriter::new();
        w.begin(1, true).u32(2, 3).str(3, "x").end();
        let buf = w.finish();
        for n in 0..buf.len() {
            for a in Attrs::new(&buf[..n]).flatten() {
                let _ = a.nested().count();
            }
        }
    }
}
