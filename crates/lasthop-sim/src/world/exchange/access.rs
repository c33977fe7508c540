//! Channel access: the medium says who transmits (`on_access`), and each transmitter builds its
//! PPDU (`build_ppdu`): rate control picks the rate and the link fills the user's A-MPDU
//! (`World::build_ampdu`). A PPDU that did not collide is then received user by user
//! (`receive.rs`; a DL MU PPDU through `ofdma`), and its end settled by `settle.rs`.

use super::*;

impl World {
    pub(in crate::world) fn on_access(&mut self, ch: u16) {
        let now = self.q.now();
        let outcome = self.chans[ch as usize].medium.start_access(now);
        if outcome.transmitters.is_empty() {
            // Cannot happen (the event was scheduled for a ready contender); stay safe.
            self.schedule_next_access(ch);
            return;
        }
        // Internal collisions (§10.23.2.4): the losing EDCAF backs off as after an external
        // collision; its frames stay queued and no MPDU retry counter moves (`world/wmm.rs`).
        for &c in &outcome.internal_losers {
            self.chans[ch as usize].medium.edcaf_mut(c).on_failure(self.air.retry_limit);
        }
        self.totals.internal_collisions += outcome.internal_losers.len() as u64;
        let mut txs = Vec::with_capacity(outcome.transmitters.len());
        if self.ofdma.is_some() {
            let medium = &self.chans[ch as usize].medium;
            self.scratch.transmitting.clear();
            self.scratch.transmitting.extend(outcome.transmitters.iter().map(|&c| medium.get(c).owner));
        }
        for &c in &outcome.transmitters {
            txs.push(self.build_ppdu(Ctd { ch, id: c }, now));
        }
        // A lone holder whose TXOP limit allows more than one exchange may go on after this one
        // (`txop.rs`); after a collision, the first exchange failed and the TXOP ends with it.
        self.chans[ch as usize].txop = match txs.as_slice() {
            [tx] if tx.kind == TxKind::Data => self.txop_limit(Ctd { ch, id: tx.contender }).map(|l| Txop { holder: tx.contender, end: now + l }),
            _ => None,
        };
        self.run_exchange(ch, now, txs);
    }

    /// The PPDUs `txs` start at `now` on channel `ch`: more than one is a collision; the
    /// recipients of a lone one receive it; the exchange's end is scheduled.
    pub(in crate::world) fn run_exchange(&mut self, ch: u16, now: Instant, mut txs: Vec<Tx>) {
        let collision = txs.len() > 1;
        // A protected PPDU goes only after its CTS (`protect.rs`): in a collision only the RTSs
        // collide.
        if collision {
            txs.iter_mut().filter_map(|t| t.rts.as_mut()).for_each(|r| r.cts = false);
        } else if txs[0].rts.is_some() {
            let cts = self.cts_back(&txs[0]);
            txs[0].rts.as_mut().expect("checked above").cts = cts;
        }
        let busy_end = txs.iter().map(Tx::air_end).fold(now, Instant::max);
        self.totals.ppdus += txs.len() as u64;
        if collision {
            self.totals.collisions += 1;
        }
        let mut response_sent = false;
        let mut end = busy_end;
        if !collision && txs[0].users.first().is_some_and(|u| u.mu.is_some()) {
            if let Some(e) = self.receive_mu(&mut txs[0]) {
                response_sent = true;
                end = end.max(e);
            }
        } else if !collision && txs[0].data_sent() {
            let tx = &mut txs[0];
            for u in tx.users.iter_mut() {
                if let Some(e) = self.receive_user(u, tx.ppdu_end) {
                    response_sent = true;
                    end = end.max(e);
                }
                self.ext_announce(u, tx.ppdu_end);
            }
        }
        if self.capture.is_some() {
            self.record_exchange(now, &txs, collision, response_sent);
        }
        self.totals.busy_ns += (end - now).as_nanos();
        let chan = &mut self.chans[ch as usize];
        chan.busy_ns += (end - now).as_nanos();
        chan.exchange = Some(Exchange { txs, start: now, end, response_sent });
        self.q.schedule(end, Ev::ExchangeEnd(ch));
        // A queue that dropped a sender's packet while the PPDUs were built (a CoDel drop on
        // dequeue) freed its bytes below the socket: Linux frees the skb at once, and its
        // destructor (`tcp_wfree`) runs the TCP-small-queues handler, so the sender sends again
        // now, not when the exchange ends.
        self.tcp_pump_dirty(now);
    }

    /// What contender `c` sends now.
    fn build_ppdu(&mut self, ctd: Ctd, now: Instant) -> Tx {
        let c = ctd.id;
        if ctd == self.ap_beacon {
            self.beacon_pending = false;
            self.totals.beacons += 1;
            let d = phy::legacy_duration(BEACON_RATE, frame::BEACON, self.air.band);
            return Tx { contender: c, kind: TxKind::Beacon, users: Vec::new(), ppdu_end: now + d, rts: None };
        }
        if self.ofdma.is_some() && ctd == self.ap_data[self.ctd_slot(ctd)] {
            if let Some(tx) = self.build_mu(ctd, now) {
                return tx;
            }
        }
        let k = self.ctd_slot(ctd);
        let (sta, dir) = self.next_link(ctd, k, now);
        self.build_su(ctd, sta, dir, k, now, None).expect("a PPDU without a budget always holds a frame")
    }

    /// The link the winning EDCA function `ctd` (of slot `k`) serves now: the station the AP's
    /// driver picks, a relay's next hop, or a station's uplink.
    pub(in crate::world) fn next_link(&mut self, ctd: Ctd, k: usize, now: Instant) -> (u32, Dir) {
        let c = ctd.id;
        if self.chans[ctd.ch as usize].medium.get(c).owner == 0 {
            let sta = self.with_driver(k, now, |d, mac| d.next_station(mac)).flatten();
            (sta.expect("AP ready with no active station"), Dir::Down)
        } else {
            let j = self.chans[ctd.ch as usize].medium.get(c).owner - 1;
            match self.stations[j as usize].relay {
                // A relay serves its next hops in turn (with two radios, each its own side).
                Some(r) => {
                    let rl = &mut self.relays[r as usize];
                    let e = match rl.down {
                        None => rl.txqs.next_txq(),
                        Some(d) if d == ctd => rl.txqs.next_txq_where(|e| e != 0),
                        Some(_) => rl.txqs.next_txq_where(|e| e == 0),
                    };
                    self.node_entry_link(j + 1, e.expect("relay ready with nothing to send"))
                }
                None => (j, Dir::Up),
            }
        }
    }

    /// A single-user PPDU of contender `ctd` (slot `k`) for `sta` in `dir`. `budget`: the
    /// longest PPDU the rest of its TXOP allows (`txop.rs`); None if it cannot hold one
    /// full-size MPDU at the rate chosen. Without a budget, the PPDU limit of its AC.
    pub(in crate::world) fn build_su(&mut self, ctd: Ctd, sta: u32, dir: Dir, k: usize, now: Instant, budget: Option<Duration>) -> Option<Tx> {
        // Rate control picks the rate of this PPDU from the SNR it would see (ideal) or from its
        // own statistics (Minstrel-HT; one rate per A-MPDU, samples included — see
        // `wifi/mac/rate.rs` for what that simplifies).
        let cap = self.sender_ampdu_limit(sta, dir);
        let (txv, snr, max_n) = {
            let s = &mut self.stations[sta as usize];
            let snr = s.snr.at(now);
            let rc = &mut s.rc[dir as usize];
            rc.set_snr_db(snr);
            let txv = rc.select(now);
            // A probe goes as one MPDU, outside any aggregate (as drivers send rate-control
            // probe frames), so a failed probe costs one frame, not an A-MPDU.
            let n = if rc.last_was_sample() { 1 } else { self.air.max_mpdus.min(cap) as usize };
            (txv, snr, n)
        };
        // ath9k-like: no aggregation at or below the configured rate (6.5 Mb/s).
        let single = self.air.aggregation_min_rate > 0 && txv.data_rate_bps() <= self.air.aggregation_min_rate;
        let max_n = if single { 1 } else { max_n };
        let max_psdu = match budget {
            None => self.max_psdu(sta, dir, k, &txv),
            Some(b) => self.burst_psdu(sta, &txv, b)?,
        };
        // One user: the link the EDCA function serves. The users' list and its MPDU list come
        // back from a finished PPDU with their capacity.
        let mut users = self.scratch.tx_pool.pop().unwrap_or_default();
        let mut mpdus = users.pop().map(|u| u.mpdus).unwrap_or_default();
        users.clear();
        // A driver forming ahead sizes its A-MPDUs for the rate, not for a rate probe's lone frame.
        let formed_n = if single { 1 } else { self.air.max_mpdus.min(cap) as usize };
        self.formation_begin(sta, dir, k, formed_n, max_psdu);
        let mut psdu = self.build_ampdu(sta, dir, k, now, max_n, max_psdu, &mut mpdus);
        self.formation_built(sta, dir, k);
        if single && self.air.standard == Standard::Ht {
            // A plain MPDU (HT has no single-MPDU A-MPDU format requirement).
            psdu = mpdu_bytes(&self.pkts, self.air.qos, mpdus[0].1);
        }
        let d = phy::ppdu_duration(&txv, psdu, self.air.band);
        if dir == Dir::Up && self.ofdma.is_some() {
            self.ofdma_report(sta, k);
        }
        self.note_ampdu(sta, dir, mpdus.len(), &txv, now);
        self.totals.mpdu_attempts += mpdus.len() as u64;
        users.push(PpduUser { sta, dir, ac: k as u8, txv, rate: txv, mu: None, snr, mpdus, acked: false });
        let mut tx = Tx { contender: ctd.id, kind: TxKind::Data, users, ppdu_end: now + d, rts: None };
        if budget.is_none() {
            // A channel access opens the exchange: its sender may protect it.
            self.protect(&mut tx, max_n > 1, now);
        }
        Some(tx)
    }

    /// The most MPDUs the sender of `sta`'s link in `dir` puts in an A-MPDU: the station's own
    /// radio's limit on the uplink; on the downlink its parent's, when a relay sends (the AP's
    /// is the cell's alone).
    #[inline]
    pub(in crate::world) fn sender_ampdu_limit(&self, sta: u32, dir: Dir) -> u32 {
        self.sender_radio(sta, dir, u32::MAX, |s| s.ampdu_tx)
    }

    /// `radio` of the station whose radio sends `sta`'s link in `dir`: `sta` itself on the
    /// uplink, its parent on the downlink when a relay sends; `ap` when the AP sends.
    #[inline]
    pub(in crate::world) fn sender_radio<T>(&self, sta: u32, dir: Dir, ap: T, radio: impl Fn(&Station) -> T) -> T {
        let s = &self.stations[sta as usize];
        match dir {
            Dir::Up => radio(s),
            Dir::Down => s.parent.map_or(ap, |p| radio(&self.stations[p as usize])),
        }
    }

    /// An A-MPDU of `n` MPDUs at `txv` for `sta` in `dir`, in the run's statistics.
    pub(in crate::world) fn note_ampdu(&mut self, sta: u32, dir: Dir, n: usize, txv: &TxVector, now: Instant) {
        if now < self.warmup {
            return;
        }
        let len = self.air.max_mpdus as usize + 1;
        let s = &mut self.stations[sta as usize];
        let h = &mut s.ampdu_hist[dir as usize];
        if h.is_empty() {
            h.resize(len, 0);
        }
        h[n] += 1;
        s.rate_sum[dir as usize] += txv.data_rate_f64();
        s.rate_n[dir as usize] += 1;
        if dir == Dir::Down {
            self.ts.ampdu_mpdus.add(sta as usize, now.as_nanos(), n as f64);
            self.ts.ampdu_n.add(sta as usize, now.as_nanos(), 1.0);
            self.ts.phy_rate.add(sta as usize, now.as_nanos(), txv.data_rate_f64());
        }
    }
}
