// Comparison harness: TCP bulk downloads through one cell, run in ns-3 (3.37, the Debian package
// libns3-dev). This is a separate program that uses ns-3 as a library; it is not part of
// lasthop and lasthop contains no ns-3 code. See reference/ns3/README.md.
//
// One AP and n stations 1 m apart (no losses), VHT 80 MHz MCS 9 with 2 streams, A-MPDUs of up
// to 64 MPDUs, no RTS/CTS, plus a server wired to the AP (point-to-point, 10 Gb/s, 1 us; the AP
// routes between the two). The AP's WiFi device runs `qdisc` (fq_codel | fifo, `limit` packets)
// above ns-3's 500-packet WifiMacQueue per AC; the server's side has queues large enough never
// to drop. One TCP bulk download per station (BulkSend at the server, PacketSink at the
// station) from `appStart`, TCP set up as Linux's: CUBIC (or NewReno), MSS 1448 (1500-byte IP
// packets: 20 IP + 20 TCP + 12 timestamp option octets, as lasthop's TCP model), SACK,
// an ACK every second full segment, 40 ms delayed-ACK timer, 200 ms minimum RTO, initial
// window 10, 64 MB socket buffers so that windows never limit.
//
// Stations join one after another, `assocStagger` seconds apart (each gets the cell's SSID
// then; until then its passive scan finds no AP). Started together, every station ends its
// first scan at the same instant and sends its Association Request at once; ns-3 sends them on
// AC_VO (management frames to a QoS AP, §10.2.3.2), whose CW of 3..7 cannot separate 100
// stations: with 100 stations most never associate and the watchdog of those left waiting
// (MaxMissedBeacons) restarts them every 1.144 s.
//
// An originator waits `addbaTimeout` for the ADDBA Response after its ADDBA Request was acked
// (QosTxop AddBaResponseTimeout; ns-3's default is 1 ms). With 100 stations the AP's response
// often takes longer to reach the medium: a station then sends its first frame (the SYN-ACK)
// outside the agreement, the agreement forms just after, and in ns-3 that flow never gets a
// byte through (5 of 100 connections stay in SYN_SENT for the whole run with 1 ms). 20 ms
// lets every agreement form before data moves; lasthop starts with agreements in place.
//
// Variants, each one ns-3 behaviour set to what Linux (and lasthop) does:
//   --explicitBar=0: QosTxop UseExplicitBarAfterMissedBlockAck false. By default ns-3 answers
//     every missed Block Ack with a Block Ack Request exchange before it retransmits
//     (HtFrameExchangeManager::MissedBlockAck); without it the unacknowledged MPDUs go again
//     in the next A-MPDU, as mac80211 drivers do. ns-3.37 then decides whether to send an
//     A-MPDU again from the device's short retry counter for the access category, which every
//     missed Block Ack raises and no received Block Ack resets: at 7 (MaxSsrc) the A-MPDU is
//     discarded whole. ns-3's own option --ns3::WifiRemoteStationManager::MaxSsrc=1000 lifts
//     that limit.
//   --fqTarget, --fqInterval, --fqFlows, --fqQuantum, --fqDropBatch: the AP's
//     FqCoDelQueueDisc attributes (ns-3 defaults 5ms, 100ms, 1024, the device MTU (1500),
//     64); mac80211's flow queue uses 20ms, 100ms, 4096, 300 and drops at most 32 packets
//     (half the flow) on overflow (net/mac80211/tx.c ieee80211_txq_setup_flows,
//     include/net/fq_impl.h fq_init and fq_flow_drop).
//
// Prints, one "key value" per line (counts and times over [measureFrom, time]):
//   sta <i> goodput_bps <payload bytes the sink received in the window x 8 / window>
//     rx_bytes <all it received> rto <its sender's timeouts, whole run>
//   goodput_bps <total>, jain <Jain's index of the per-station goodputs>
//   ampdu_mean_down / ampdu_mean_up: MPDUs per QoS-data PSDU sent by the AP / the stations
//     (PhyTxPsduBegin; uplink data are the TCP ACKs)
//   psdus_down, psdus_up, mpdus_down, mpdus_up: those PSDUs and the MPDUs they carried
//   bars: Block Ack Requests sent (all nodes)
//   collisions: groups of two or more transmissions overlapping in time, from every node's
//     PhyTxPsduBegin and the PSDU's duration (WifiPhy::CalculateTxDuration), the group counted
//     in the window if its first transmission starts there; collided_psdus: the transmissions
//     in those groups; collisions_ap: the groups with a transmission of the AP's;
//     collision_spread_us <us> <count>: those groups by the time from their first
//     transmission's start to their last's, in whole microseconds (0: one slot)
//   after_sta_ba <who> <us> <count>: after a station's (Block) Ack to the AP's data, the next
//     data PSDU by who sent it ("ap", "same": that station, "other": another station) and the
//     microseconds from the start of the (Block) Ack to its start
//   timeouts_ap / timeouts_sta: the AP's / the stations' response timeouts, the WifiMac trace
//     sources PsduResponseTimeout (a PSDU's Block Ack missing) plus MpduResponseTimeout (a
//     single MPDU's Ack missing)
//   rx_drop_ap <reason> <count>: the AP PHY's PhyRxDrop trace by WifiPhyRxfailureReason
//   mac_drop_ap / mac_drop_sta <reason> <count>: MPDUs the MACs dropped (WifiMac DroppedMpdu,
//     by WifiMacDropReason: 0 queue full, 1 lifetime expired, 2 retry limit, 3 old packet; an
//     MPDU of a Block Ack agreement dropped at the retry limit comes once as 2 and once as 3)
//   qdisc_drops_ap: packets the AP's root queue disc dropped (its Drop trace); qdisc_drop_ap
//     <reason> <count>: the same by reason, blanks as underscores ("Overlimit_drop": the
//     fattest flow's packets dropped at the limit; "(Dropped_by_child_queue_disc)_Target_
//     exceeded_drop": a flow's CoDel)
//   fq_quantum: the AP FqCoDelQueueDisc's DRR quantum in bytes
//   tcp_rto, tcp_recoveries: the senders' entries into CA_LOSS (a retransmission timeout) and
//     CA_RECOVERY (fast recovery), from their CongState traces
//   associated <stations associated at appStart>, deassociations <over the run>
// With --airtime, the window's airtime as fractions of it, from the same transmission records:
//   air_down, air_up (QoS data PPDUs without overlap), air_ctrl (Block Acks, Acks, Block Ack
//   Requests), air_mgmt (beacons, action frames), air_collision (the union of overlapping
//   groups), air_idle (the rest: SIFS, AIFS, backoff, idle), air_sifs (the part of air_idle in
//   gaps of at most SIFS between one transmission and the next, that is inside an exchange,
//   which lasthop's busy time includes); and the AP PHY's state
//   (WifiPhyStateHelper's State trace) as ap_state_tx, ap_state_rx, ap_state_cca_busy,
//   ap_state_idle.

#include "cell_common.h"

#include "ns3/applications-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <algorithm>
#include <map>

using namespace ns3;

enum Kind { DATA_DOWN, DATA_UP, CTRL, MGMT, NKINDS };

struct Tx {
    Time start, end;
    Kind kind;
    bool ap;
    int node;  // -1: the AP, else the station's index
};

static Time g_from, g_to;
static std::vector<Tx> g_tx;
static uint64_t g_psdus[2] = {0, 0}, g_mpdus[2] = {0, 0}, g_bars = 0;
static uint64_t g_timeouts[2] = {0, 0};
static std::map<int, uint64_t> g_rxDrop, g_macDrop[2];
static uint64_t g_qdiscDrops = 0, g_rto = 0, g_recoveries = 0;
static std::map<std::string, uint64_t> g_qdiscDropReason;
static std::map<int64_t, uint64_t> g_collisionSpread;
static std::vector<uint32_t> g_flowRto;
static Time g_state[8];
static WifiPhyBand g_band;

static bool InWindow() {
    Time now = Simulator::Now();
    return now >= g_from && now < g_to;
}

static void OnPsdu(int node, WifiConstPsduMap psdus, WifiTxVector txv, double) {
    bool ap = node < 0;
    Time now = Simulator::Now();
    Time d = WifiPhy::CalculateTxDuration(psdus, txv, g_band);
    if (now + d <= g_from || now >= g_to) return;
    Kind kind = MGMT;
    for (auto& [id, psdu] : psdus) {
        if (psdu->GetNMpdus() == 0) continue;
        const WifiMacHeader& h = psdu->GetHeader(0);
        if (h.IsQosData()) {
            kind = ap ? DATA_DOWN : DATA_UP;
            if (InWindow()) {
                g_psdus[ap ? 0 : 1]++;
                g_mpdus[ap ? 0 : 1] += psdu->GetNMpdus();
            }
        } else if (h.IsCtl()) {
            kind = CTRL;
            if (h.IsBlockAckReq() && InWindow()) g_bars++;
        }
    }
    g_tx.push_back({now, now + d, kind, ap, node});
}

static void OnTimeout(bool ap, uint8_t, Ptr<const WifiPsdu>, const WifiTxVector&) {
    if (InWindow()) g_timeouts[ap ? 0 : 1]++;
}

static void OnMpduTimeout(bool ap, uint8_t, Ptr<const WifiMpdu>, const WifiTxVector&) {
    if (InWindow()) g_timeouts[ap ? 0 : 1]++;
}

static void OnRxDrop(Ptr<const Packet>, WifiPhyRxfailureReason r) {
    if (InWindow()) g_rxDrop[(int)r]++;
}

static void OnMacDrop(bool ap, WifiMacDropReason r, Ptr<const WifiMpdu>) {
    if (InWindow()) g_macDrop[ap ? 0 : 1][(int)r]++;
}

static void OnQdiscDrop(Ptr<const QueueDiscItem>) {
    if (InWindow()) g_qdiscDrops++;
}

static void OnQdiscDropReason(Ptr<const QueueDiscItem>, const char* reason) {
    if (!InWindow()) return;
    std::string r(reason);
    std::replace(r.begin(), r.end(), ' ', '_');
    g_qdiscDropReason[r]++;
}

static void OnCongState(uint32_t i, TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t s) {
    if (s == TcpSocketState::CA_LOSS) g_flowRto[i]++;
    if (!InWindow()) return;
    if (s == TcpSocketState::CA_LOSS) g_rto++;
    if (s == TcpSocketState::CA_RECOVERY) g_recoveries++;
}

// Logged when a state ends (TX: when it starts, with its duration); clipped to the window.
static void OnState(Time start, Time duration, WifiPhyState state) {
    Time a = std::max(start, g_from), b = std::min(start + duration, g_to);
    if (b > a && (int)state < 8) g_state[(int)state] += b - a;
}

int main(int argc, char* argv[]) {
    std::string qdisc = "fq_codel", cc = "cubic";
    uint32_t nSta = 1, limit = 10240, seed = 1;
    double simTime = 11.0, appStart = 6.0, measureFrom = -1, assocStagger = 0.02, addbaTimeout = 0.02;
    bool airtime = false, explicitBar = true;
    std::string fqTarget = "5ms", fqInterval = "100ms";
    uint32_t fqFlows = 1024, fqQuantum = 0, fqDropBatch = 64;
    CommandLine cmd(__FILE__);
    cmd.AddValue("n", "stations", nSta);
    cmd.AddValue("time", "simulated seconds (end of the measurement window)", simTime);
    cmd.AddValue("appStart", "seconds at which every download starts", appStart);
    cmd.AddValue("measureFrom", "start of the measurement window (default appStart + 0.5)", measureFrom);
    cmd.AddValue("seed", "run number", seed);
    cmd.AddValue("cc", "cubic | newreno", cc);
    cmd.AddValue("qdisc", "fq_codel | fifo (the AP's root queue disc)", qdisc);
    cmd.AddValue("limit", "packets in the AP's root queue disc", limit);
    cmd.AddValue("assocStagger", "seconds between the stations' joins (0: all at once)", assocStagger);
    cmd.AddValue("addbaTimeout", "seconds an originator waits for the ADDBA Response", addbaTimeout);
    cmd.AddValue("airtime", "also print the window's airtime breakdown", airtime);
    cmd.AddValue("explicitBar", "QosTxop UseExplicitBarAfterMissedBlockAck", explicitBar);
    cmd.AddValue("fqTarget", "the AP's FqCoDelQueueDisc Target", fqTarget);
    cmd.AddValue("fqInterval", "the AP's FqCoDelQueueDisc Interval", fqInterval);
    cmd.AddValue("fqFlows", "the AP's FqCoDelQueueDisc Flows", fqFlows);
    cmd.AddValue("fqQuantum", "the AP's FqCoDelQueueDisc quantum in bytes (0: the device MTU)", fqQuantum);
    cmd.AddValue("fqDropBatch", "the AP's FqCoDelQueueDisc DropBatchSize", fqDropBatch);
    cmd.Parse(argc, argv);
    if (measureFrom < 0) measureFrom = appStart + 0.5;
    g_from = Seconds(measureFrom);
    g_to = Seconds(simTime);

    Config::SetDefault("ns3::WifiRemoteStationManager::RtsCtsThreshold", UintegerValue(4692480));
    Config::SetDefault("ns3::QosTxop::AddBaResponseTimeout", TimeValue(Seconds(addbaTimeout)));
    Config::SetDefault("ns3::QosTxop::UseExplicitBarAfterMissedBlockAck", BooleanValue(explicitBar));
    Config::SetDefault("ns3::TcpL4Protocol::SocketType",
                       TypeIdValue(cc == "newreno" ? TcpNewReno::GetTypeId() : TcpCubic::GetTypeId()));
    LinuxLikeTcp();
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    QueueDiscContainer apQdisc;
    Cell c = BuildCell("ac", nSta, 9, 2, 80, false, 64, true, [&](NetDeviceContainer& apDev) {
        TrafficControlHelper tch;
        std::string lim = std::to_string(limit) + "p";
        if (qdisc == "fifo") {
            tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue(lim));
        } else {
            tch.SetRootQueueDisc("ns3::FqCoDelQueueDisc", "MaxSize", StringValue(lim), "Target",
                                 StringValue(fqTarget), "Interval", StringValue(fqInterval), "Flows",
                                 UintegerValue(fqFlows), "DropBatchSize", UintegerValue(fqDropBatch));
        }
        apQdisc = tch.Install(apDev);
        // The quantum is no attribute in ns-3.37; unset, the queue disc takes the device's MTU
        // when it is initialized (FqCoDelQueueDisc::CheckConfig).
        if (auto fq = DynamicCast<FqCoDelQueueDisc>(apQdisc.Get(0)); fq && fqQuantum > 0) fq->SetQuantum(fqQuantum);
    });
    apQdisc.Get(0)->TraceConnectWithoutContext("Drop", MakeCallback(&OnQdiscDrop));
    apQdisc.Get(0)->TraceConnectWithoutContext("DropBeforeEnqueue", MakeCallback(&OnQdiscDropReason));
    apQdisc.Get(0)->TraceConnectWithoutContext("DropAfterDequeue", MakeCallback(&OnQdiscDropReason));
    NodeContainer& ap = c.ap;
    NodeContainer& stas = c.stas;
    TrackAssociations(c, nSta, assocStagger);
    uint32_t associatedAtStart = 0;
    Simulator::Schedule(Seconds(appStart), [&]() { associatedAtStart = g_assoc.associated; });

    // The server, wired to the AP; both ends' queues far larger than any window.
    NodeContainer server;
    server.Create(1);
    InternetStackHelper stack;
    stack.Install(server);
    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", StringValue("10Gbps"));
    p2p.SetChannelAttribute("Delay", StringValue("1us"));
    p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue("200000p"));
    NetDeviceContainer wired = p2p.Install(server.Get(0), ap.Get(0));
    TrafficControlHelper wiredTc;
    wiredTc.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue("200000p"));
    wiredTc.Install(wired);
    Ipv4AddressHelper addr;
    addr.SetBase("10.2.0.0", "255.255.255.0");
    Ipv4InterfaceContainer wiredIf = addr.Assign(wired);
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    std::vector<Ptr<PacketSink>> sinks;
    std::vector<Ptr<BulkSendApplication>> senders;
    g_flowRto.assign(nSta, 0);
    for (uint32_t i = 0; i < nSta; i++) {
        uint16_t port = 5000 + i;
        senders.push_back(BulkDownload(c, i, server.Get(0), port, appStart, sinks));
    }
    Simulator::Schedule(Seconds(appStart) + MicroSeconds(1), [&]() {
        for (uint32_t i = 0; i < nSta; i++)
            senders[i]->GetSocket()->TraceConnectWithoutContext("CongState", MakeBoundCallback(&OnCongState, i));
    });
    std::vector<uint64_t> rxAtFrom(nSta, 0);
    Simulator::Schedule(g_from, [&]() {
        for (uint32_t i = 0; i < nSta; i++) rxAtFrom[i] = sinks[i]->GetTotalRx();
    });

    auto connect = [&](Ptr<NetDevice> dev, int node) {
        bool isAp = node < 0;
        Ptr<WifiNetDevice> w = DynamicCast<WifiNetDevice>(dev);
        Ptr<WifiPhy> phy = w->GetPhy();
        g_band = phy->GetPhyBand();
        phy->TraceConnectWithoutContext("PhyTxPsduBegin", MakeBoundCallback(&OnPsdu, node));
        w->GetMac()->TraceConnectWithoutContext("PsduResponseTimeout", MakeBoundCallback(&OnTimeout, isAp));
        w->GetMac()->TraceConnectWithoutContext("MpduResponseTimeout", MakeBoundCallback(&OnMpduTimeout, isAp));
        w->GetMac()->TraceConnectWithoutContext("DroppedMpdu", MakeBoundCallback(&OnMacDrop, isAp));
        if (isAp) {
            phy->TraceConnectWithoutContext("PhyRxDrop", MakeCallback(&OnRxDrop));
            phy->GetState()->TraceConnectWithoutContext("State", MakeCallback(&OnState));
        }
    };
    connect(c.apDev.Get(0), -1);
    for (uint32_t i = 0; i < nSta; i++) connect(c.staDev.Get(i), (int)i);

    Simulator::Stop(g_to);
    Simulator::Run();

    double window = (g_to - g_from).GetSeconds();
    double total = 0, sumSq = 0;
    for (uint32_t i = 0; i < nSta; i++) {
        double g = (sinks[i]->GetTotalRx() - rxAtFrom[i]) * 8.0 / window;
        total += g;
        sumSq += g * g;
        std::cout << "sta " << i << " goodput_bps " << g << " rx_bytes " << sinks[i]->GetTotalRx() << " rto "
                  << g_flowRto[i] << std::endl;
    }
    std::cout << "goodput_bps " << total << std::endl;
    std::cout << "associated " << associatedAtStart << std::endl;
    std::cout << "deassociations " << g_assoc.deassociations << std::endl;
    std::cout << "jain " << (sumSq > 0 ? total * total / (nSta * sumSq) : 0.0) << std::endl;
    std::cout << "ampdu_mean_down " << (g_psdus[0] ? (double)g_mpdus[0] / g_psdus[0] : 0.0) << std::endl;
    std::cout << "ampdu_mean_up " << (g_psdus[1] ? (double)g_mpdus[1] / g_psdus[1] : 0.0) << std::endl;
    std::cout << "psdus_down " << g_psdus[0] << std::endl;
    std::cout << "psdus_up " << g_psdus[1] << std::endl;
    std::cout << "mpdus_down " << g_mpdus[0] << std::endl;
    std::cout << "mpdus_up " << g_mpdus[1] << std::endl;
    std::cout << "bars " << g_bars << std::endl;

    // Overlapping transmissions: sweep the records in start order, grouping each with the
    // ones that begin before the group's latest end.
    std::sort(g_tx.begin(), g_tx.end(), [](const Tx& a, const Tx& b) { return a.start < b.start; });
    uint64_t collisions = 0, collided = 0, collisionsAp = 0;
    Time air[NKINDS], airCollision, airSifs, prevEnd = Time(-1);
    const Time sifs = MicroSeconds(16);
    auto clip = [](Time a, Time b) { return std::max(Time(0), std::min(b, g_to) - std::max(a, g_from)); };
    for (size_t i = 0; i < g_tx.size();) {
        size_t j = i + 1;
        Time end = g_tx[i].end;
        while (j < g_tx.size() && g_tx[j].start < end) end = std::max(end, g_tx[j++].end);
        if (prevEnd >= Time(0) && g_tx[i].start - prevEnd <= sifs + NanoSeconds(100)) airSifs += clip(prevEnd, g_tx[i].start);
        prevEnd = std::max(prevEnd, end);
        if (j - i > 1) {
            if (g_tx[i].start >= g_from && g_tx[i].start < g_to) {
                collisions++;
                collided += j - i;
                // Microseconds from the group's first start to its last (0: all in one slot).
                g_collisionSpread[(g_tx[j - 1].start - g_tx[i].start).GetMicroSeconds()]++;
                for (size_t k = i; k < j; k++) {
                    if (g_tx[k].ap) {
                        collisionsAp++;
                        break;
                    }
                }
            }
            airCollision += clip(g_tx[i].start, end);
        } else {
            air[g_tx[i].kind] += clip(g_tx[i].start, g_tx[i].end);
        }
        i = j;
    }
    std::cout << "collisions " << collisions << std::endl;
    // Who takes the medium after a station's (Block) Ack to the AP's data, and when.
    std::map<std::pair<std::string, int64_t>, uint64_t> afterBa;
    for (size_t k = 1; k < g_tx.size(); k++) {
        if (g_tx[k].kind != CTRL || g_tx[k].ap || g_tx[k - 1].kind != DATA_DOWN) continue;
        if (g_tx[k].start < g_from || g_tx[k].start >= g_to) continue;
        for (size_t m = k + 1; m < std::min(g_tx.size(), k + 4); m++) {
            if (g_tx[m].kind != DATA_DOWN && g_tx[m].kind != DATA_UP) continue;
            std::string who = g_tx[m].ap ? "ap" : g_tx[m].node == g_tx[k].node ? "same" : "other";
            afterBa[{who, (g_tx[m].start - g_tx[k].start).GetMicroSeconds()}]++;
            break;
        }
    }
    for (auto& [key, n] : afterBa) std::cout << "after_sta_ba " << key.first << " " << key.second << " " << n << std::endl;
    std::cout << "collided_psdus " << collided << std::endl;
    std::cout << "collisions_ap " << collisionsAp << std::endl;
    for (auto& [us, n] : g_collisionSpread) std::cout << "collision_spread_us " << us << " " << n << std::endl;
    std::cout << "timeouts_ap " << g_timeouts[0] << std::endl;
    std::cout << "timeouts_sta " << g_timeouts[1] << std::endl;
    for (auto& [r, n] : g_rxDrop) std::cout << "rx_drop_ap " << (WifiPhyRxfailureReason)r << " " << n << std::endl;
    for (int k = 0; k < 2; k++)
        for (auto& [r, n] : g_macDrop[k]) std::cout << (k ? "mac_drop_sta " : "mac_drop_ap ") << r << " " << n << std::endl;
    if (auto fq = DynamicCast<FqCoDelQueueDisc>(apQdisc.Get(0)))
        std::cout << "fq_quantum " << fq->GetQuantum() << std::endl;
    std::cout << "qdisc_drops_ap " << g_qdiscDrops << std::endl;
    for (auto& [r, n] : g_qdiscDropReason) std::cout << "qdisc_drop_ap " << r << " " << n << std::endl;
    std::cout << "tcp_rto " << g_rto << std::endl;
    std::cout << "tcp_recoveries " << g_recoveries << std::endl;
    if (airtime) {
        Time busy = airCollision;
        for (int k = 0; k < NKINDS; k++) busy += air[k];
        Time w = g_to - g_from;
        auto frac = [&](Time t) { return t.GetSeconds() / w.GetSeconds(); };
        std::cout << "air_down " << frac(air[DATA_DOWN]) << std::endl;
        std::cout << "air_up " << frac(air[DATA_UP]) << std::endl;
        std::cout << "air_ctrl " << frac(air[CTRL]) << std::endl;
        std::cout << "air_mgmt " << frac(air[MGMT]) << std::endl;
        std::cout << "air_collision " << frac(airCollision) << std::endl;
        std::cout << "air_idle " << frac(w - busy) << std::endl;
        std::cout << "air_sifs " << frac(airSifs) << std::endl;
        std::cout << "ap_state_tx " << frac(g_state[WifiPhyState::TX]) << std::endl;
        std::cout << "ap_state_rx " << frac(g_state[WifiPhyState::RX]) << std::endl;
        std::cout << "ap_state_cca_busy " << frac(g_state[WifiPhyState::CCA_BUSY]) << std::endl;
        std::cout << "ap_state_idle " << frac(g_state[WifiPhyState::IDLE]) << std::endl;
    }
    Simulator::Destroy();
    return 0;
}
