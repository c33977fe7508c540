//! The frame exchange, driven on the event loop: a contender wins the medium (`on_access`),
//! builds its PPDU from its link's queues through `lasthop_wifi::mac::ampdu`, the response
//! follows or not per the error model, and at the exchange's end (`on_exchange_end`) each
//! transmitter's outcome goes to rate control, its EDCA function, the Block Ack scoreboard
//! (`lasthop_wifi::mac::scoreboard`) and its queue scheduler. The timing rules of the exchange
//! are `lasthop_wifi::mac::exchange`'s.

use super::*;

impl World {
    pub(super) fn on_access(&mut self, ch: u16) {
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
        let mut busy_end = now;
        for &c in &outcome.transmitters {
            let tx = self.build_ppdu(Ctd { ch, id: c }, now);
            if tx.ppdu_end > busy_end {
                busy_end = tx.ppdu_end;
            }
            txs.push(tx);
        }
        let collision = txs.len() > 1;
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
        } else if !collision {
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
    }

    /// The recipient's side of user `u` of a PPDU that ended at `ppdu_end` without a
    /// collision: which MPDUs arrive (the link's error model), and if any did, whether its
    /// Block Ack/Ack gets back (`u.acked`). Returns the end of that response, if one is sent.
    /// (Several users respond together, as stations answer a DL MU PPDU in one HE TB PPDU.)
    pub(super) fn receive_user(&mut self, u: &mut PpduUser, ppdu_end: Instant) -> Option<Instant> {
        let s = &mut self.stations[u.sta as usize];
        let (txv, snr) = (u.txv, u.snr);
        let mut any = false;
        for m in u.mpdus.iter_mut() {
            let ok = mpdu_ok(s, mpdu_bytes(&self.pkts, self.air.qos, m.1), &txv, snr);
            m.2 = ok;
            any |= ok;
        }
        if !any {
            return None;
        }
        let end = exchange::response_end(ppdu_end, self.air.timing.sifs, self.air.control_rate, self.air.response_len, self.air.band);
        let p = match s.err {
            ErrModel::Snr => {
                let bits = snr.to_bits();
                if s.ba_cache.0 != bits {
                    s.ba_cache = (bits, phy::legacy_success_prob(self.air.control_rate, snr, self.air.response_len));
                }
                s.ba_cache.1
            }
            _ => 1.0,
        };
        u.acked = p >= 1.0 || s.err_rng.bernoulli(p);
        Some(end)
    }


    /// What contender `c` sends now.
    fn build_ppdu(&mut self, ctd: Ctd, now: Instant) -> Tx {
        let c = ctd.id;
        if ctd == self.ap_beacon {
            self.beacon_pending = false;
            self.totals.beacons += 1;
            let d = phy::legacy_duration(BEACON_RATE, frame::BEACON, self.air.band);
            return Tx { contender: c, kind: TxKind::Beacon, users: Vec::new(), ppdu_end: now + d };
        }
        if self.ofdma.is_some() && ctd == self.ap_data[self.ctd_slot(ctd)] {
            if let Some(tx) = self.build_mu(ctd, now) {
                return tx;
            }
        }
        // One user: the link the winning EDCA function serves. The users' list and its MPDU
        // list come back from a finished PPDU with their capacity.
        let mut users = self.scratch.tx_pool.pop().unwrap_or_default();
        let mut mpdus = users.pop().map(|u| u.mpdus).unwrap_or_default();
        users.clear();
        let k = self.ctd_slot(ctd);
        let (sta, dir) = if self.chans[ctd.ch as usize].medium.get(c).owner == 0 {
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
        };
        // Rate control picks the rate of this PPDU from the SNR it would see (ideal) or from its
        // own statistics (Minstrel-HT; one rate per A-MPDU, samples included — see
        // `wifi/mac/rate.rs` for what that simplifies).
        let (txv, snr, max_n) = {
            let s = &mut self.stations[sta as usize];
            let snr = s.snr.at(now);
            let rc = &mut s.rc[dir as usize];
            rc.set_snr_db(snr);
            let txv = rc.select(now);
            // A probe goes as one MPDU, outside any aggregate (as drivers send rate-control
            // probe frames), so a failed probe costs one frame, not an A-MPDU.
            let n = if rc.last_was_sample() { 1 } else { self.air.max_mpdus as usize };
            (txv, snr, n)
        };
        // ath9k-like: no aggregation at or below the configured rate (6.5 Mb/s).
        let single = self.air.aggregation_min_rate > 0 && txv.data_rate_bps() <= self.air.aggregation_min_rate;
        let max_n = if single { 1 } else { max_n };
        let max_psdu = self.max_psdu(sta, dir, k, &txv);
        let mut psdu = self.build_ampdu(sta, dir, k, now, max_n, max_psdu, &mut mpdus);
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
        Tx { contender: c, kind: TxKind::Data, users, ppdu_end: now + d }
    }

    /// An A-MPDU of `n` MPDUs at `txv` for `sta` in `dir`, in the run's statistics.
    pub(super) fn note_ampdu(&mut self, sta: u32, dir: Dir, n: usize, txv: &TxVector, now: Instant) {
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

    pub(super) fn on_exchange_end(&mut self, ch: u16) {
        let ex = self.chans[ch as usize].exchange.take().expect("exchange in progress");
        let single = ex.txs.len() == 1;
        let busy_end = ex.end;
        // Bystanders defer EIFS after a frame they received in error (§10.3.2.3.7): a data PPDU
        // whose payload failed (no response followed), and — only if configured — a collision
        // (see `MacSpec::eifs_after_collision`).
        let data = ex.txs[0].kind == TxKind::Data;
        let undecodable = exchange::bystanders_defer_eifs(ex.txs.len(), data, ex.response_sent, self.air.eifs_after_collision);
        let medium = &mut self.chans[ch as usize].medium;
        medium.set_idle(busy_end);
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
            let airtime = if single { ex.end - ex.start } else { tx.ppdu_end - ex.start };
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
                if success {
                    e.on_success();
                } else {
                    e.on_failure(self.air.retry_limit);
                }
            }
            for u in tx.users.iter_mut() {
                let a = ofdma::user_airtime(airtime, u, tones);
                self.complete_user(u, single && u.acked, a, tx.ppdu_end);
            }
            self.scratch.tx_pool.push(std::mem::take(&mut tx.users));
            // A failed transmitter invokes backoff when its Ack timeout expires and counts
            // AIFS from there (§10.3.2.3.7 / §10.23.2.4); if the medium was still busy
            // then (a longer colliding PPDU), it counts from the end of that busy period,
            // and if a response came that it could not decode, it defers EIFS.
            if !success {
                let r = exchange::failure_reference(tx.ppdu_end, self.air.ack_timeout, busy_end, ex.response_sent, self.air.eifs_extra);
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
    pub(super) fn subframe_times(&self, txv: &TxVector, mu: Option<ofdma::MuClock>, mpdus: &[(u32, PktRef, bool)], ppdu_end: Instant, times: &mut Vec<Instant>) {
        let (pkts, qos, band, each) = (&self.pkts, self.air.qos, self.air.band, self.air.rx_per_subframe);
        let lens = mpdus.iter().map(|m| mpdu_bytes(pkts, qos, m.1));
        match mu {
            None => ampdu::subframe_ends(txv, band, lens, ppdu_end, each, times),
            Some(c) => ampdu::mu_subframe_ends(txv, band, c.pre_ns, c.start, lens, ppdu_end, each, times),
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
            self.msdus_into(p);
            chain.clear();
            chain.append(&mut self.scratch.chain);
            for &q in &chain {
                let pk = &mut self.pkts[q.id as usize];
                (pk.next, pk.mpdu) = (NO_NEXT, 0);
                match dir {
                    Dir::Down => self.down_arrive(sta, q, rx_time),
                    Dir::Up => self.up_arrive(sta, q, rx_time),
                }
            }
        }
        // The receiving station's GRO flushes at the end of the PPDU's deliveries.
        self.tcp_gro_flush(self.q.now());
        for p in dups.drain(..) {
            self.msdus_into(p);
            chain.clear();
            chain.append(&mut self.scratch.chain);
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
