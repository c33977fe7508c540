//! The exchange's end (`on_exchange_end`): the medium goes idle (bystanders defer EIFS after an
//! undecodable PPDU), and each transmitter's outcome goes to rate control and the airtime
//! accounts (`account_user`), its EDCA function, the Block Ack scoreboard (`complete_user`,
//! `complete_mpdus`: the released MSDUs go on at their subframe's reception) and its queue
//! scheduler.

use super::*;
use lasthop_wifi::mac::exchange;

impl World {
    pub(in crate::world) fn on_exchange_end(&mut self, ch: u16) {
        let ex = self.chans[ch as usize].exchange.take().expect("exchange in progress");
        let single = ex.txs.len() == 1;
        let busy_end = ex.end;
        // Bystanders defer EIFS after a frame they received in error (§10.3.2.3.7): a data PPDU
        // whose payload failed (no response followed), and — only if configured — a collision
        // (see `MacSpec::eifs_after_collision`).
        // (An RTS that drew no CTS was decodable.)
        let data = ex.txs[0].kind == TxKind::Data && ex.txs[0].data_sent();
        let undecodable = exchange::bystanders_defer_eifs(ex.txs.len(), data, ex.response_sent, self.air.eifs_after_collision);
        // A holder whose TXOP goes on keeps the medium (`txop.rs`).
        let txop_goes_on = self.txop_goes_on(ch, &ex);
        let medium = &mut self.chans[ch as usize].medium;
        if !txop_goes_on {
            medium.set_idle(busy_end);
        }
        if undecodable {
            // A station receives none of its own PPDUs: its other ACs' EDCAFs do not defer
            // EIFS after it (`wmm::own_data_ppdu`; with one AC there are none).
            let exempt = wmm::eifs_exempt(medium, &ex.txs);
            medium.defer_bystanders(busy_end + self.air.eifs_extra, &exempt);
        }
        for mut tx in ex.txs {
            if tx.kind == TxKind::Beacon {
                let medium = &mut self.chans[ch as usize].medium;
                medium.edcaf_mut(tx.contender).on_unacked();
                medium.set_not_ready(tx.contender);
                continue;
            }
            if tx.kind == TxKind::Bsrp {
                // Answered by TB PPDUs (no acknowledgment follows them); its readiness after
                // is `ofdma_after_exchange`'s.
                self.chans[ch as usize].medium.edcaf_mut(tx.contender).on_success();
                continue;
            }
            // Each user is charged the PPDU's time on the medium.
            let airtime = if single { ex.end - ex.start } else { tx.air_end() - ex.start };
            // In a DL MU PPDU, each its RU's share.
            let tones = ofdma::users_tones(&tx.users);
            let mut success = false;
            for u in &tx.users {
                let ok = single && u.acked;
                self.account_user(ch, u, ok, ofdma::user_airtime(airtime, u, tones), ex.start, busy_end);
                success |= ok;
            }
            {
                let e = self.chans[ch as usize].medium.edcaf_mut(tx.contender);
                if success && txop_goes_on {
                    // Its backoff is drawn when the TXOP ends (`txop.rs`).
                    e.on_success_in_txop();
                } else if success {
                    e.on_success();
                } else {
                    e.on_failure(self.air.retry_limit);
                }
            }
            // (A PPDU whose RTS drew no CTS ends with its RTS: none of its MPDUs arrived.)
            let air_end = tx.air_end();
            for u in tx.users.iter_mut() {
                let a = ofdma::user_airtime(airtime, u, tones);
                self.complete_user(u, single && u.acked, a, air_end);
            }
            self.scratch.tx_pool.push(std::mem::take(&mut tx.users));
            // A failed transmitter invokes backoff when its Ack timeout expires and counts
            // AIFS from there (§10.3.2.3.7 / §10.23.2.4); if the medium was still busy
            // then (a longer colliding PPDU), it counts from the end of that busy period,
            // and if a response came that it could not decode, it defers EIFS.
            if !success {
                let r = exchange::failure_reference(air_end, self.air.ack_timeout, busy_end, ex.response_sent, self.air.eifs_extra);
                self.chans[ch as usize].medium.set_ref(tx.contender, r);
            }
        }
        let now = self.q.now();
        // Completions freed firmware room and airtime budget.
        self.ap_tx_status(now);
        if self.ofdma.is_some() {
            self.ofdma_after_exchange(now);
        }
        self.tcp_pump_dirty(now);
        if txop_goes_on && self.txop_after_exchange(ch, busy_end) {
            return;
        }
        self.schedule_next_access(ch);
    }

    /// What a finished PPDU's user `u` on channel `ch` tells the cell: its airtime (per
    /// station, per node and channel, and to the AP's airtime scheduler), and its outcome to
    /// rate control and the link's telemetry. `success`: its Block Ack/Ack came back.
    fn account_user(&mut self, ch: u16, u: &PpduUser, success: bool, airtime: Duration, start: Instant, busy_end: Instant) {
        let (sta, dir, k) = (u.sta, u.dir, u.ac as usize);
        if start >= self.warmup {
            self.stations[sta as usize].airtime[dir as usize] += airtime;
            self.ts.airtime.add(sta as usize, start.as_nanos(), airtime.as_nanos() as f64);
        }
        let node = self.tx_node(sta, dir);
        let n_ch = self.chans.len();
        self.node_tx_ns[node as usize * n_ch + ch as usize] += airtime.as_nanos();
        // mac80211 charges a station for airtime in both directions, per AC.
        if self.stations[sta as usize].parent.is_none() {
            self.txqs[k].register_airtime(sta, airtime);
        }
        let attempted = u.mpdus.len() as u32;
        let (acked, acked_bytes) = if success {
            u.mpdus.iter().filter(|m| m.2).fold((0u32, 0u64), |(n, b), m| (n + 1, b + m.1.len as u64))
        } else {
            (0, 0)
        };
        let s = &mut self.stations[sta as usize];
        s.rc[dir as usize].report(busy_end, u.rate, attempted, acked);
        s.link[dir as usize].on_ppdu(attempted, acked, acked_bytes, airtime);
    }

    /// The MPDUs of a finished PPDU's user `u` (aggctl's receiver, the Block Ack scoreboard),
    /// then its link's turn ends: a relay's port (charged `airtime`), the AP's driver or the
    /// station's queue says whether its EDCA function has more to send. `u.mpdus` is left empty.
    fn complete_user(&mut self, u: &mut PpduUser, success: bool, airtime: Duration, ppdu_end: Instant) {
        let (sta, dir, k) = (u.sta, u.dir, u.ac as usize);
        self.aggctl_on_ppdu(sta, dir, u.txv, &u.mpdus, ppdu_end);
        self.complete_mpdus(sta, dir, k, &mut u.mpdus, success, (&u.txv, u.mu), ppdu_end);
        u.mpdus.clear();
        self.formation_complete(sta, dir, k);
        let port = self.relay_port(sta, dir);
        let a = &mut self.stations[sta as usize].ac[k];
        let more = a.orig(dir).has_retx();
        match dir {
            _ if port.is_some() => {
                let (r, e) = port.expect("relay port");
                let rl = &mut self.relays[r as usize];
                rl.txqs.register_airtime(e, airtime);
                rl.txqs.return_txq(e, more);
                let up = self.stations[rl.sta as usize].ac[k].ctd.expect("a relay's EDCAF");
                let down = rl.down;
                match down {
                    None if !rl.txqs.has_active() => self.set_not_ready(up),
                    Some(d) if e != 0 && !self.relay_has_work(r, true) => self.set_not_ready(d),
                    Some(_) if e == 0 && !self.relay_has_work(r, false) => self.set_not_ready(up),
                    _ => {}
                }
            }
            Dir::Down => {
                let now = self.q.now();
                if self.with_driver(k, now, |d, mac| d.end_turn(mac, sta, more)) == Some(false) {
                    self.set_not_ready(self.ap_data[k]);
                }
            }
            Dir::Up => {
                if a.up_idle() {
                    let c = a.ctd.expect("the EDCAF that sent");
                    self.set_not_ready(c);
                }
            }
        }
    }

    /// When each of `mpdus`, sent at `txv` (in a DL MU PPDU: on `mu`'s clock), is received,
    /// into `times` (`ampdu::subframe_ends`).
    pub(in crate::world) fn subframe_times(&self, txv: &TxVector, mu: Option<ofdma::MuClock>, mpdus: &[(u32, PktRef, bool)], ppdu_end: Instant, times: &mut Vec<Instant>) {
        self.subframe_ends_of(txv, mu, mpdus, ppdu_end, self.air.rx_per_subframe, times);
    }

    /// As `subframe_times`, each subframe's own end when `each`, else all at the PPDU's end.
    pub(in crate::world) fn subframe_ends_of(&self, txv: &TxVector, mu: Option<ofdma::MuClock>, mpdus: &[(u32, PktRef, bool)], ppdu_end: Instant, each: bool, times: &mut Vec<Instant>) {
        let (pkts, qos, band) = (&self.pkts, self.air.qos, self.air.band);
        let lens = mpdus.iter().map(|m| mpdu_bytes(pkts, qos, m.1));
        match mu {
            None => ampdu::subframe_ends(txv, band, lens, ppdu_end, each, times),
            Some(c) => ampdu::mu_subframe_ends(txv, band, c.pre_ns, c.start, lens, ppdu_end, each, times),
        }
    }

    /// One MSDU of a received MPDU, out of its A-MSDU chain, on to the receiver's side.
    #[inline]
    fn msdu_up(&mut self, sta: u32, dir: Dir, q: PktRef, rx_time: Instant) {
        let pk = &mut self.pkts[q.id as usize];
        (pk.next, pk.mpdu) = (NO_NEXT, 0);
        match dir {
            Dir::Down => self.down_arrive(sta, q, rx_time),
            Dir::Up => self.up_arrive(sta, q, rx_time),
        }
    }

    /// Block Ack accounting for the MPDUs of one PPDU (`lasthop_wifi::mac::scoreboard`):
    /// what the recipient releases in order goes up at the time its subframe was received
    /// (`ampdu::subframe_ends`); unacknowledged MPDUs are queued for retransmission or dropped
    /// at the retry limit.
    #[allow(clippy::too_many_arguments)]
    fn complete_mpdus(&mut self, sta: u32, dir: Dir, k: usize, mpdus: &mut [(u32, PktRef, bool)], acked: bool, at: (&TxVector, Option<ofdma::MuClock>), ppdu_end: Instant) {
        let mut times = std::mem::take(&mut self.scratch.times);
        self.subframe_times(at.0, at.1, mpdus, ppdu_end, &mut times);
        let mut released = std::mem::take(&mut self.scratch.rx);
        let mut dups = std::mem::take(&mut self.scratch.dup);
        let retry_limit = self.air.retry_limit;
        let mut link = LinkIo { w: self, sta, dir, k, port: None, now: ppdu_end };
        scoreboard::complete(&mut link, mpdus, acked, &times, ppdu_end, retry_limit, &mut released, &mut dups);
        self.scratch.times = times;
        self.totals.mpdus_delivered += released.len() as u64;
        let mut chain = std::mem::take(&mut self.scratch.chain);
        for (p, rx_time) in released.drain(..) {
            // Each MSDU of the MPDU goes on alone (a relay may aggregate it differently).
            if self.pkts[p.id as usize].next == NO_NEXT {
                // One MSDU (no A-MSDU): no chain to walk.
                self.msdu_up(sta, dir, p, rx_time);
                continue;
            }
            self.msdus_into(p);
            chain.clear();
            std::mem::swap(&mut chain, &mut self.scratch.chain);
            for &q in &chain {
                self.msdu_up(sta, dir, q, rx_time);
            }
        }
        // The receiving station's GRO flushes at the end of the PPDU's deliveries.
        self.tcp_gro_flush(self.q.now());
        for p in dups.drain(..) {
            self.msdus_into(p);
            chain.clear();
            std::mem::swap(&mut chain, &mut self.scratch.chain);
            for &q in &chain {
                self.release(q);
            }
        }
        chain.clear();
        self.scratch.chain = chain;
        self.scratch.rx = released;
        self.scratch.dup = dups;
    }
}
