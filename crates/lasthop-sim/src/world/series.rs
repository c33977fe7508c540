//! The run's time series in fixed bins (`World::ts`): what the hosts record as the run goes,
//! and `output::collect` turns into the result's series.

use crate::metrics::Series;

/// The run's time series, one row per flow, station or node (0 = the AP, 1 + s = station s)
/// and one column per bin of `sim.bin`; `output::collect` turns them into the result's.
pub struct BinnedSeries {
    pub goodput: Series,
    pub delay_sum: Series,
    pub delay_n: Series,
    pub ampdu_mpdus: Series,
    pub ampdu_n: Series,
    pub airtime: Series,
    /// Sum of downlink PHY rates per station per bin (÷ `ampdu_n` = mean rate).
    pub phy_rate: Series,
    pub cwnd: Series,
    pub inflight: Series,
    pub pacing: Series,
    pub rtt_sum: Series,
    pub rtt_n: Series,
    pub retx: Series,
    /// Per node, sampled at each node tick: interface-queue limit and backlog (packets), and
    /// the number of samples per bin.
    pub node_limit: Series,
    pub node_backlog: Series,
    pub node_n: Series,
}

impl BinnedSeries {
    /// How many of [`BinnedSeries::all_mut`]'s series are per flow.
    pub(in crate::world) const PER_FLOW: usize = 9;

    pub(super) fn new(n_flows: usize, n_sta: usize, bins: usize, bin: u64) -> BinnedSeries {
        BinnedSeries {
            goodput: Series::new(n_flows, bins, bin),
            delay_sum: Series::new(n_flows, bins, bin),
            delay_n: Series::new(n_flows, bins, bin),
            ampdu_mpdus: Series::new(n_sta, bins, bin),
            ampdu_n: Series::new(n_sta, bins, bin),
            airtime: Series::new(n_sta, bins, bin),
            phy_rate: Series::new(n_sta, bins, bin),
            cwnd: Series::new(n_flows, bins, bin),
            inflight: Series::new(n_flows, bins, bin),
            pacing: Series::new(n_flows, bins, bin),
            rtt_sum: Series::new(n_flows, bins, bin),
            rtt_n: Series::new(n_flows, bins, bin),
            retx: Series::new(n_flows, bins, bin),
            node_limit: Series::new(n_sta + 1, bins, bin),
            node_backlog: Series::new(n_sta + 1, bins, bin),
            node_n: Series::new(n_sta + 1, bins, bin),
        }
    }

    /// Every series: per flow first (the first [`BinnedSeries::PER_FLOW`]), then per station and
    /// node.
    pub(in crate::world) fn all_mut(&mut self) -> [&mut Series; 16] {
        [
            &mut self.goodput,
            &mut self.delay_sum,
            &mut self.delay_n,
            &mut self.cwnd,
            &mut self.inflight,
            &mut self.pacing,
            &mut self.rtt_sum,
            &mut self.rtt_n,
            &mut self.retx,
            &mut self.ampdu_mpdus,
            &mut self.ampdu_n,
            &mut self.airtime,
            &mut self.phy_rate,
            &mut self.node_limit,
            &mut self.node_backlog,
            &mut self.node_n,
        ]
    }
}
