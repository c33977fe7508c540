//! Generic netlink (`linux/genetlink.h`): the 4-octet family header after `nlmsghdr`
//! (command, version, reserved) and the controller family `nlctrl` (id 16), which maps a
//! family name such as "nl80211" to the message type the kernel assigned it.

use super::{AttrWriter, Attrs, Msg, NLM_F_REQUEST};

/// `GENL_ID_CTRL`: the controller's fixed message type.
pub const GENL_ID_CTRL: u16 = 16;
pub const CTRL_CMD_NEWFAMILY: u8 = 1;
pub const CTRL_CMD_GETFAMILY: u8 = 3;
pub const CTRL_ATTR_FAMILY_ID: u16 = 1;
pub const CTRL_ATTR_FAMILY_NAME: u16 = 2;
pub const CTRL_ATTR_VERSION: u16 = 3;
pub const CTRL_ATTR_HDRSIZE: u16 = 4;
pub const CTRL_ATTR_MAXATTR: u16 = 5;

pub const GENL_HDRLEN: usize = 4;

/// The family header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GenlHdr {
    pub cmd: u8,
    pub version: u8,
}

impl GenlHdr {
    pub fn bytes(&self) -> [u8; 4] {
        [self.cmd, self.version, 0, 0]
    }
}

/// A generic-netlink message's family header and attributes.
pub fn split(m: &Msg) -> Result<(GenlHdr, Attrs<'_>), String> {
    if m.payload.len() < GENL_HDRLEN {
        return Err(format!("generic netlink message of type {} without its family header", m.ty));
    }
    Ok((GenlHdr { cmd: m.payload[0], version: m.payload[1] }, Attrs::new(&m.payload[GENL_HDRLEN..])))
}

/// A writer for a message of `family` with command `cmd` (attributes follow the header).
pub fn writer(cmd: u8, version: u8) -> AttrWriter {
    AttrWriter::with_header(&GenlHdr { cmd, version }.bytes())
}

/// `CTRL_CMD_GETFAMILY` for `name`.
pub fn get_family(name: &str, seq: u32) -> Msg {
    let mut w = writer(CTRL_CMD_GETFAMILY, 1);
    w.str(CTRL_ATTR_FAMILY_NAME, name);
    Msg::new(GENL_ID_CTRL, NLM_F_REQUEST, seq, w.finish())
}

/// The family id in a `CTRL_CMD_NEWFAMILY` answer.
pub fn family_id(m: &Msg) -> Result<u16, String> {
    let (h, attrs) = split(m)?;
    if m.ty != GENL_ID_CTRL || h.cmd != CTRL_CMD_NEWFAMILY {
        return Err(format!("expected a controller NEWFAMILY message, got type {} command {}", m.ty, h.cmd));
    }
    attrs.find(CTRL_ATTR_FAMILY_ID)?.ok_or("NEWFAMILY without CTRL_ATTR_FAMILY_ID")?.u16()
}

/// The name asked for in a `CTRL_CMD_GETFAMILY` request (the emulator's side).
pub fn requested_family(m: &Msg) -> Result<String, String> {
    let (h, attrs) = split(m)?;
    if h.cmd != CTRL_CMD_GETFAMILY {
        return Err(format!("controller command {} is not GETFAMILY", h.cmd));
    }
    Ok(attrs.find(CTRL_ATTR_FAMILY_NAME)?.ok_or("GETFAMILY without a family name")?.str()?.to_string())
}

/// The controller's answer announcing `name` as family `id`.
pub fn new_family(req: &Msg, name: &str, id: u16, version: u32, maxattr: u32) -> Msg {
    let mut w = writer(CTRL_CMD_NEWFAMILY, 2);
    w.str(CTRL_ATTR_FAMILY_NAME, name).u16(CTRL_ATTR_FAMILY_ID, id).u32(CTRL_ATTR_VERSION, version).u32(CTRL_ATTR_HDRSIZE, 0).u32(CTRL_ATTR_MAXATTR, maxattr);
    Msg { ty: GENL_ID_CTRL, flags: 0, seq: req.seq, pid: req.pid, payload: w.finish() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_lookup_round_trip() {
        let req = get_family("nl80211", 5);
        assert_eq!(requested_family(&req).unwrap(), "nl80211");
        let ans = new_family(&req, "nl80211", 0x1c, 1, 330);
        assert_eq!(family_id(&ans).unwrap(), 0x1c);
        assert_eq!(ans.seq, 5);
    }
}
