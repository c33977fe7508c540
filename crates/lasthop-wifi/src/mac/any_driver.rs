//! [`AnyDriver`]: the AP's drivers (`driver.rs`: the interface and the pull driver;
//! `firmware.rs`, `mt76.rs`) as one type the frame exchange holds, dispatched by a match rather than a
//! trait object, so no MPDU pays for a dynamic call.

use crate::mac::ampdu::Take;
use crate::mac::driver::{ApDriver, Mac80211, PullDriver};
use crate::mac::firmware::Firmware;
use crate::mac::mt76::Mt76;

/// The AP drivers, dispatched without indirection on the frame exchange's path.
#[derive(Clone, Debug)]
pub enum AnyDriver<P> {
    Pull(PullDriver),
    Firmware(Box<Firmware<P>>),
    Mt76(Box<Mt76<P>>),
}

macro_rules! dispatch {
    ($self:ident, $d:ident => $e:expr) => {
        match $self {
            AnyDriver::Pull($d) => $e,
            AnyDriver::Firmware($d) => $e,
            AnyDriver::Mt76($d) => $e,
        }
    };
}

impl<P: Copy> ApDriver<P> for AnyDriver<P> {
    #[inline]
    fn next_station<M: Mac80211<P>>(&mut self, mac: &mut M) -> Option<u32> {
        dispatch!(self, d => d.next_station(mac))
    }
    fn mu_stations<M: Mac80211<P>>(&mut self, mac: &mut M, max: usize, out: &mut Vec<u32>) {
        dispatch!(self, d => d.mu_stations(mac, max, out))
    }
    fn holds<M: Mac80211<P>>(&self, mac: &M, sta: u32) -> bool {
        dispatch!(self, d => d.holds(mac, sta))
    }
    fn has_frames<M: Mac80211<P>>(&self, mac: &M) -> bool {
        dispatch!(self, d => d.has_frames(mac))
    }
    #[inline]
    fn take<M: Mac80211<P>>(&mut self, mac: &mut M, sta: u32, fits: impl Fn(&P) -> bool) -> Take<P> {
        dispatch!(self, d => d.take(mac, sta, fits))
    }
    #[inline]
    fn end_turn<M: Mac80211<P>>(&mut self, mac: &mut M, sta: u32, more: bool) -> bool {
        dispatch!(self, d => d.end_turn(mac, sta, more))
    }
    #[inline]
    fn on_wake<M: Mac80211<P>>(&mut self, mac: &mut M) -> bool {
        dispatch!(self, d => d.on_wake(mac))
    }
    #[inline]
    fn on_tx_status<M: Mac80211<P>>(&mut self, mac: &mut M) -> bool {
        dispatch!(self, d => d.on_tx_status(mac))
    }
    #[inline]
    fn release(&mut self, sta: u32, est: u64) {
        match self {
            AnyDriver::Pull(d) => ApDriver::<P>::release(d, sta, est),
            AnyDriver::Firmware(d) => d.release(sta, est),
            AnyDriver::Mt76(d) => d.release(sta, est),
        }
    }
    fn builds_from_mac80211(&self) -> bool {
        match self {
            AnyDriver::Pull(d) => ApDriver::<P>::builds_from_mac80211(d),
            AnyDriver::Firmware(d) => d.builds_from_mac80211(),
            AnyDriver::Mt76(d) => d.builds_from_mac80211(),
        }
    }
}
