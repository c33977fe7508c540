// Comparison harness: 802.11ax downlink (and uplink) OFDMA in one cell, run in ns-3 (3.37, the
// Debian package libns3-dev). This is a separate program that uses ns-3 as a library; it is not
// part of lasthop and lasthop contains no ns-3 code. See reference/ns3/README.md.
//
// One HE AP and n stations 1 m apart (no losses; cell_common.h, standard "ax": 5 GHz, 80 MHz,
// HE MCS `mcs` with `nss` streams, 800 ns guard interval, constant rate, no RTS/CTS), Block Ack
// buffers of 256 MPDUs and A-MPDUs up to the HE maximum (6500631 octets), so that an A-MPDU
// holds up to 256 MPDUs where the PPDU's 5.484 ms allow it. `mode`:
//   su: no multi-user scheduler: every data PPDU is an HE SU PPDU to one station.
//   dl: ns3::RrMultiUserScheduler aggregated to the AP, DL OFDMA (EnableUlOfdma false);
//       `nStations` is its NStations (how many stations one DL MU PPDU may serve; default n),
//       `ack` the WifiDefaultAckManager's DlMuAckSequenceType: mu-bar (DL_MU_AGGREGATE_TF, a
//       MU-BAR Trigger Frame aggregated to every user's A-MPDU, the Block Acks in HE TB PPDUs),
//       tf-mu-bar (DL_MU_TF_MU_BAR, one MU-BAR Trigger Frame in its own PPDU a SIFS after the
//       DL MU PPDU) or bar-ba (DL_MU_BAR_BA_SEQUENCE, ns-3.37's default: one station answers
//       at once, the others get a BlockAckReq/BlockAck exchange each).
//   ul: the same scheduler with EnableUlOfdma true and EnableBsrp `bsrp` (default false: with
//       no downlink frames queued, 3.37's RrMultiUserScheduler::SelectTxFormat sends a BSRP
//       Trigger Frame at every access and never a Basic one). The AP has nothing to send, so
//       the scheduler asks for channel access every `accessReq` microseconds
//       (MultiUserScheduler AccessReqInterval, measured from the AP's last access); the
//       stations contend too unless `muEdcaTimer` > 0, which has the AP advertise an MU EDCA
//       Parameter Set with AIFSN 0 (EDCA disabled) for that many 8.192 ms units after a station
//       has been served in a TB PPDU. With `queueSize` the stations report their queue size in
//       every QoS data frame (QosFrameExchangeManager SetQueueSize; by default ns-3.37 reports it
//       only in the QoS Null frames answering a trigger, so that without BSRP the AP, knowing no
//       buffer status, solicits UlPsduSize (500) octets every other time).
// Traffic (`udp`, the default): saturated UDP of 1500-byte IP packets (1472-byte payload) in the
// mode's direction (su: `down`, default down; dl: down; ul: up), one UdpClient per station sending
// every `interval` us (default 5 x n: 2.4 Gb/s offered in all, as one of cell.cc's clients; fewer
// packets to drop than 5 us per client, the same saturation). With `tcp` instead: one CUBIC bulk
// transfer per station in the mode's direction, from `appStart` (1 s): downlink from the AP
// (BulkSend at the AP, PacketSink at the station), uplink to it (BulkSend at the station,
// PacketSink at the AP); MSS 1448, SACK, timestamps, an ACK every second segment, as tcp.cc. With `assocStagger` the stations join that many
// seconds apart, as in tcp.cc: started together, some of them associate only after a few
// attempts, and a download that starts before its station has associated loses its SYN at the
// AP (ns-3 drops frames to stations not associated) and had not begun by the end of the run.
//
// Prints one JSON object on one line (stdout); counts over [warmup, time):
//   goodput_mbps, sta_goodput_mbps[i]: IP bytes received by the UDP servers (TCP: payload at the
//     sinks), x 8 / window; mean_delay_ms: mean one-way delay of the UDP packets received in the
//     window, from the UdpClient's send (its SeqTsHeader time stamp) to the UdpServer;
//     associated: stations associated at the window's start.
//   From every node's PhyTxPsduBegin trace (the PSDU map and TXVECTOR of each PPDU sent):
//   mu_ppdus: HE MU PPDUs; users_per_mu_ppdu: their mean number of PSDUs; ru_hist: user
//     allocations by RU size in tones; mpdus_per_mu_user: mean QoS data MPDUs per user PSDU;
//     mu_bar_in_mu: user PSDUs carrying an aggregated MU-BAR Trigger Frame;
//   tb_ppdus: HE TB PPDUs (one per station), tb_events: distinct TB PPDU start instants;
//     tb_ba, tb_data, tb_qos_null: TB PPDUs carrying a BlockAck / QoS data / QoS Null frames;
//     mpdus_per_tb_data: mean QoS data MPDUs per TB PPDU carrying data; tb_ru_hist: those TB
//     PPDUs by RU size in tones;
//   triggers_mu_bar, triggers_basic, triggers_bsrp: Trigger Frames sent in their own (SU or
//     non-HT) PPDU; bars, bas, multi_sta_bas, acks: BlockAckReqs, BlockAcks, Multi-STA
//     BlockAcks and Acks in such PPDUs;
//   su_ppdus: HE SU (and non-HT) PPDUs of any content; su_data_ppdus: those carrying QoS data,
//     mpdus_per_su_data: their mean MPDUs;
//   dur_us: mean duration per kind (mu, tb, su_data, trigger, bar, ba, multi_sta_ba, ack)
//     from WifiPhy::CalculateTxDuration.
//   ap_psdu_timeouts, ap_mpdu_timeouts: the AP MAC's PsduResponseTimeout and
//     MpduResponseTimeout traces (a PSDU's Block Ack, an MPDU's Ack missing); ap_map_timeouts:
//     its PsduMapResponseTimeout (not every station solicited by a MU-BAR, Basic or BSRP
//     Trigger Frame answered), ap_map_missing: the stations that did not; ap_rx_drop: the AP
//     PHY's PhyRxDrop by WifiPhyRxfailureReason.
// With `trace` N > 0: the first N PPDUs of the window, one line each on stderr (start in us,
// node, preamble, duration, and per PSDU its STA-ID, RU, MCS, MPDUs, bytes and frame kinds).

#include "cell_common.h"

#include "ns3/applications-module.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <sstream>

using namespace ns3;

static Time g_from, g_to;
static WifiPhyBand g_band = WIFI_PHY_BAND_5GHZ;

struct RxStats {
    uint64_t packets = 0;
    uint64_t bytes = 0;
    double delaySum = 0;
    uint64_t delayN = 0;
};
static std::vector<RxStats> g_rx;

struct Counts {
    uint64_t mu = 0, muUsers = 0, muUserMpdus = 0, muBarInMu = 0;
    std::map<uint32_t, uint64_t> ruHist;
    uint64_t tb = 0, tbBa = 0, tbData = 0, tbQosNull = 0, tbDataMpdus = 0;
    std::map<uint32_t, uint64_t> tbRuHist;
    std::map<int64_t, uint64_t> tbStarts;
    uint64_t trigMuBar = 0, trigBasic = 0, trigBsrp = 0, bars = 0, bas = 0, multiStaBas = 0, acks = 0;
    uint64_t su = 0, suData = 0, suDataMpdus = 0;
    std::map<std::string, std::pair<double, uint64_t>> dur;  // kind -> (sum us, count)
};
static Counts g_c;
// The AP's PHY drops (PhyRxDrop, by WifiPhyRxfailureReason) and its MAC's response timeouts:
// PSDUs left without their (Block) Ack, PSDU maps (MU PPDUs, Trigger Frames) and the stations
// among their addressees that did not answer.
static std::map<std::string, uint64_t> g_apRxDrop;
static uint64_t g_apPsduTimeouts = 0, g_apMpduTimeouts = 0, g_apMapTimeouts = 0, g_apMapMissing = 0;
static uint32_t g_traceLeft = 0;

static bool InWindow() {
    Time now = Simulator::Now();
    return now >= g_from && now < g_to;
}

static void AddDur(const std::string& kind, Time d) {
    auto& e = g_c.dur[kind];
    e.first += d.GetNanoSeconds() / 1000.0;
    e.second++;
}

static uint32_t Tones(HeRu::RuType t) {
    switch (t) {
    case HeRu::RU_26_TONE: return 26;
    case HeRu::RU_52_TONE: return 52;
    case HeRu::RU_106_TONE: return 106;
    case HeRu::RU_242_TONE: return 242;
    case HeRu::RU_484_TONE: return 484;
    case HeRu::RU_996_TONE: return 996;
    default: return 1992;
    }
}

static std::string TriggerKind(Ptr<const WifiMpdu> mpdu) {
    CtrlTriggerHeader trig;
    mpdu->GetPacket()->PeekHeader(trig);
    if (trig.IsMuBar()) return "mu_bar";
    if (trig.IsBasic()) return "basic";
    if (trig.IsBsrp()) return "bsrp";
    return "other";
}

// One frame's kind for the trace lines.
static std::string FrameKind(Ptr<const WifiMpdu> mpdu) {
    const WifiMacHeader& h = mpdu->GetHeader();
    if (h.IsQosData()) return h.HasData() ? "D" : "QoSNull";
    if (h.IsTrigger()) {
        CtrlTriggerHeader trig;
        mpdu->GetPacket()->PeekHeader(trig);
        std::ostringstream o;
        o << "TF-" << TriggerKind(mpdu) << "(ulLength=" << trig.GetUlLength() << ",gi=" << trig.GetGuardInterval()
          << ",ltf=" << +trig.GetLtfType() << ",users=" << trig.GetNUserInfoFields() << ")";
        return o.str();
    }
    if (h.IsBlockAckReq()) return "BAR";
    if (h.IsBlockAck()) {
        CtrlBAckResponseHeader ba;
        mpdu->GetPacket()->PeekHeader(ba);
        return ba.IsMultiSta() ? "MultiStaBA" : "BA";
    }
    if (h.IsAck()) return "Ack";
    if (h.IsBeacon()) return "Beacon";
    if (h.IsMgt()) return "Mgt";
    if (h.IsAction()) return "Action";
    return "Other";
}

static void TraceLine(int node, const WifiConstPsduMap& psdus, const WifiTxVector& txv, Time d) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(3) << "t_us " << Simulator::Now().GetNanoSeconds() / 1000.0 << " node "
      << (node < 0 ? std::string("ap") : "sta" + std::to_string(node)) << " " << txv.GetPreambleType() << " bw "
      << txv.GetChannelWidth() << " gi " << txv.GetGuardInterval() << " dur_us " << d.GetNanoSeconds() / 1000.0;
    if (txv.IsDlMu()) o << " sigb " << txv.GetSigBMode().GetUniqueName();
    if (txv.IsUlMu()) o << " length " << txv.GetLength();
    for (auto& [id, psdu] : psdus) {
        o << " | sta_id " << id;
        if (txv.IsMu()) {
            auto ui = txv.GetHeMuUserInfo(id);
            o << " ru " << Tones(ui.ru.GetRuType()) << "#" << ui.ru.GetIndex() << " " << ui.mcs.GetUniqueName();
        } else {
            o << " " << txv.GetMode().GetUniqueName();
        }
        o << " mpdus " << psdu->GetNMpdus() << " bytes " << psdu->GetSize();
        std::map<std::string, uint32_t> kinds;
        std::map<std::string, uint32_t> sizes;
        for (auto it = psdu->begin(); it != psdu->end(); ++it) {
            std::string k = FrameKind(*it);
            kinds[k]++;
            sizes[k] = (*it)->GetSize();
        }
        for (auto& [k, n] : kinds) o << " " << k << "x" << n << "(" << sizes[k] << "B)";
    }
    std::cerr << o.str() << std::endl;
}

static void OnPsdu(int node, WifiConstPsduMap psdus, WifiTxVector txv, double) {
    if (!InWindow()) return;
    Time d = WifiPhy::CalculateTxDuration(psdus, txv, g_band);
    if (g_traceLeft > 0) {
        g_traceLeft--;
        TraceLine(node, psdus, txv, d);
    }
    WifiPreamble p = txv.GetPreambleType();
    if (p == WIFI_PREAMBLE_HE_MU) {
        g_c.mu++;
        g_c.muUsers += psdus.size();
        AddDur("mu", d);
        for (auto& [id, psdu] : psdus) {
            g_c.ruHist[Tones(txv.GetHeMuUserInfo(id).ru.GetRuType())]++;
            for (auto it = psdu->begin(); it != psdu->end(); ++it) {
                const WifiMacHeader& h = (*it)->GetHeader();
                if (h.IsQosData() && h.HasData()) g_c.muUserMpdus++;
                if (h.IsTrigger()) g_c.muBarInMu++;
            }
        }
        return;
    }
    if (p == WIFI_PREAMBLE_HE_TB) {
        g_c.tb++;
        if (g_c.tbStarts[Simulator::Now().GetNanoSeconds()]++ == 0) AddDur("tb", d);
        for (auto& [id, psdu] : psdus) {
            const WifiMacHeader& h = psdu->GetHeader(0);
            if (h.IsBlockAck()) {
                g_c.tbBa++;
            } else if (h.IsQosData() && h.HasData()) {
                g_c.tbData++;
                g_c.tbRuHist[Tones(txv.GetHeMuUserInfo(id).ru.GetRuType())]++;
                for (auto it = psdu->begin(); it != psdu->end(); ++it)
                    if ((*it)->GetHeader().IsQosData() && (*it)->GetHeader().HasData()) g_c.tbDataMpdus++;
            } else if (h.IsQosData()) {
                g_c.tbQosNull++;
            }
        }
        return;
    }
    g_c.su++;
    for (auto& [id, psdu] : psdus) {
        if (psdu->GetNMpdus() == 0) continue;
        Ptr<const WifiMpdu> first = *psdu->begin();
        const WifiMacHeader& h = first->GetHeader();
        if (h.IsQosData() && h.HasData()) {
            g_c.suData++;
            g_c.suDataMpdus += psdu->GetNMpdus();
            AddDur("su_data", d);
        } else if (h.IsTrigger()) {
            std::string k = TriggerKind(first);
            if (k == "mu_bar") g_c.trigMuBar++;
            if (k == "basic") g_c.trigBasic++;
            if (k == "bsrp") g_c.trigBsrp++;
            AddDur("trigger", d);
        } else if (h.IsBlockAckReq()) {
            g_c.bars++;
            AddDur("bar", d);
        } else if (h.IsBlockAck()) {
            CtrlBAckResponseHeader ba;
            first->GetPacket()->PeekHeader(ba);
            if (ba.IsMultiSta()) {
                g_c.multiStaBas++;
                AddDur("multi_sta_ba", d);
            } else {
                g_c.bas++;
                AddDur("ba", d);
            }
        } else if (h.IsAck()) {
            g_c.acks++;
            AddDur("ack", d);
        }
    }
}

static void OnUdpRx(uint32_t i, Ptr<const Packet> p) {
    if (!InWindow()) return;
    SeqTsHeader h;
    p->PeekHeader(h);
    RxStats& r = g_rx[i];
    r.packets++;
    r.bytes += p->GetSize() + 28;  // UDP payload + UDP and IP headers: the IP packet
    r.delaySum += (Simulator::Now() - h.GetTs()).GetSeconds();
    r.delayN++;
}

static void OnApRxDrop(Ptr<const Packet>, WifiPhyRxfailureReason r) {
    if (!InWindow()) return;
    std::ostringstream o;
    o << r;
    g_apRxDrop[o.str()]++;
}

static void OnApPsduTimeout(uint8_t, Ptr<const WifiPsdu>, const WifiTxVector&) {
    if (InWindow()) g_apPsduTimeouts++;
}

static void OnApMpduTimeout(uint8_t, Ptr<const WifiMpdu>, const WifiTxVector&) {
    if (InWindow()) g_apMpduTimeouts++;
}

static void OnApMapTimeout(uint8_t, WifiPsduMap*, const std::set<Mac48Address>* missing, std::size_t) {
    if (!InWindow()) return;
    g_apMapTimeouts++;
    g_apMapMissing += missing->size();
}

int main(int argc, char* argv[]) {
    std::string mode = "dl", ack = "mu-bar";
    uint32_t nSta = 4, mcs = 7, nss = 1, width = 80, nStations = 0, seed = 1, trace = 0;
    uint32_t accessReq = 10, muEdcaTimer = 0, maxMpdus = 256, gi = 800, interval = 0;
    bool udp = true, tcp = false, down = true, bsrp = false, queueSize = false;
    double simTime = 6.0, warmup = 3.0, assocStagger = 0.0, appStart = -1;
    CommandLine cmd(__FILE__);
    cmd.AddValue("n", "stations", nSta);
    cmd.AddValue("mcs", "HE MCS (0..11)", mcs);
    cmd.AddValue("nss", "spatial streams", nss);
    cmd.AddValue("width", "MHz (20, 40, 80, 160)", width);
    cmd.AddValue("mode", "su | dl | ul", mode);
    cmd.AddValue("nStations", "RrMultiUserScheduler NStations (0: n)", nStations);
    cmd.AddValue("ack", "DL MU acknowledgment: mu-bar | tf-mu-bar | bar-ba", ack);
    cmd.AddValue("bsrp", "ul: RrMultiUserScheduler EnableBsrp", bsrp);
    cmd.AddValue("accessReq", "ul: MultiUserScheduler AccessReqInterval in us", accessReq);
    cmd.AddValue("muEdcaTimer", "ul: MU EDCA timer (AIFSN 0) in units of 8.192 ms; 0: no MU EDCA Parameter Set", muEdcaTimer);
    cmd.AddValue("queueSize", "stations report their queue size in every QoS data frame (QosFrameExchangeManager SetQueueSize)", queueSize);
    cmd.AddValue("maxMpdus", "Block Ack buffer / A-MPDU limit in MPDUs (256: HE maximum)", maxMpdus);
    cmd.AddValue("gi", "HE guard interval in ns (800, 1600, 3200)", gi);
    cmd.AddValue("udp", "saturated UDP", udp);
    cmd.AddValue("interval", "UDP: each client's interval in us (0: 5 x n, 2.4 Gb/s offered in all)", interval);
    cmd.AddValue("tcp", "one CUBIC bulk download per station (instead of UDP)", tcp);
    cmd.AddValue("down", "su: downlink (else uplink)", down);
    cmd.AddValue("assocStagger", "seconds between the stations' joins (0: all at once)", assocStagger);
    cmd.AddValue("appStart", "seconds at which the first flow starts (the i-th i ms later; default 0.1 for UDP, 1.0 for TCP)", appStart);
    cmd.AddValue("time", "simulated seconds (end of the window)", simTime);
    cmd.AddValue("warmup", "seconds before the window", warmup);
    cmd.AddValue("seed", "run number", seed);
    cmd.AddValue("trace", "print the window's first N PPDUs on stderr", trace);
    cmd.Parse(argc, argv);
    if (nStations == 0) nStations = nSta;
    if (interval == 0) interval = 5 * nSta;
    if (mode == "dl") down = true;
    if (mode == "ul") down = false;
    if (tcp) udp = false;
    if (appStart < 0) appStart = tcp ? 1.0 : 0.1;
    NS_ABORT_MSG_IF(mode != "su" && mode != "dl" && mode != "ul", "mode: su | dl | ul");
    g_from = Seconds(warmup);
    g_to = Seconds(simTime);
    g_traceLeft = trace;

    Config::SetDefault("ns3::WifiRemoteStationManager::RtsCtsThreshold", UintegerValue(4692480));
    if (ack == "mu-bar") {
        Config::SetDefault("ns3::WifiDefaultAckManager::DlMuAckSequenceType",
                           EnumValue(WifiAcknowledgment::DL_MU_AGGREGATE_TF));
    } else if (ack == "tf-mu-bar") {
        Config::SetDefault("ns3::WifiDefaultAckManager::DlMuAckSequenceType", EnumValue(WifiAcknowledgment::DL_MU_TF_MU_BAR));
    } else if (ack == "bar-ba") {
        Config::SetDefault("ns3::WifiDefaultAckManager::DlMuAckSequenceType",
                           EnumValue(WifiAcknowledgment::DL_MU_BAR_BA_SEQUENCE));
    } else {
        NS_ABORT_MSG("ack: mu-bar | tf-mu-bar | bar-ba");
    }
    if (queueSize) Config::SetDefault("ns3::QosFrameExchangeManager::SetQueueSize", BooleanValue(true));
    if (muEdcaTimer > 0) {
        Time t = MicroSeconds(8192 * muEdcaTimer);
        Config::SetDefault("ns3::HeConfiguration::BeMuEdcaTimer", TimeValue(t));
        Config::SetDefault("ns3::HeConfiguration::BkMuEdcaTimer", TimeValue(t));
        Config::SetDefault("ns3::HeConfiguration::ViMuEdcaTimer", TimeValue(t));
        Config::SetDefault("ns3::HeConfiguration::VoMuEdcaTimer", TimeValue(t));
    }
    if (tcp) {
        Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpCubic::GetTypeId()));
        LinuxLikeTcp();
    }
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    Cell c = BuildCell("ax", nSta, mcs, nss, width, false, maxMpdus, true, {}, [&](WifiMacHelper& mac) {
        if (mode == "su") return;
        mac.SetMultiUserScheduler("ns3::RrMultiUserScheduler", "NStations", UintegerValue(nStations), "EnableUlOfdma",
                                  BooleanValue(mode == "ul"), "EnableBsrp", BooleanValue(mode == "ul" && bsrp),
                                  "AccessReqInterval", TimeValue(mode == "ul" ? MicroSeconds(accessReq) : Time(0)));
    });
    if (gi != 800) Config::Set("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/HeConfiguration/GuardInterval", TimeValue(NanoSeconds(gi)));
    NodeContainer& ap = c.ap;
    NodeContainer& stas = c.stas;
    TrackAssociations(c, nSta, assocStagger);
    uint32_t associatedAtFrom = 0;
    Simulator::Schedule(g_from, [&]() { associatedAtFrom = g_assoc.associated; });

    g_rx.resize(nSta);
    std::vector<Ptr<PacketSink>> sinks;
    std::vector<uint64_t> sinkAtFrom(nSta, 0);
    for (uint32_t i = 0; i < nSta; i++) {
        uint16_t port = 9000 + i;
        if (udp) {
            Ptr<Node> srvNode = down ? stas.Get(i) : ap.Get(0);
            Ptr<Node> cliNode = down ? ap.Get(0) : stas.Get(i);
            Ipv4Address dst = down ? c.staIf.GetAddress(i) : c.apIf.GetAddress(0);
            UdpServerHelper srv(port);
            ApplicationContainer s = srv.Install(srvNode);
            s.Start(Seconds(0.0));
            s.Get(0)->TraceConnectWithoutContext("Rx", MakeBoundCallback(&OnUdpRx, i));
            UdpClientHelper cli(dst, port);
            cli.SetAttribute("MaxPackets", UintegerValue(4294967295u));
            cli.SetAttribute("Interval", TimeValue(MicroSeconds(interval)));
            cli.SetAttribute("PacketSize", UintegerValue(1472));
            ApplicationContainer a = cli.Install(cliNode);
            a.Start(Seconds(appStart + 0.001 * i));
        } else if (down) {
            BulkDownload(c, i, ap.Get(0), port, appStart + 0.001 * i, sinks);
        } else {
            BulkUpload(c, i, ap.Get(0), c.apIf.GetAddress(0), port, appStart + 0.001 * i, sinks);
        }
    }
    if (tcp) {
        Simulator::Schedule(g_from, [&]() {
            for (uint32_t i = 0; i < nSta; i++) sinkAtFrom[i] = sinks[i]->GetTotalRx();
        });
    }

    auto connect = [&](Ptr<NetDevice> dev, int node) {
        Ptr<WifiPhy> phy = DynamicCast<WifiNetDevice>(dev)->GetPhy();
        g_band = phy->GetPhyBand();
        phy->TraceConnectWithoutContext("PhyTxPsduBegin", MakeBoundCallback(&OnPsdu, node));
    };
    connect(c.apDev.Get(0), -1);
    {
        Ptr<WifiNetDevice> w = DynamicCast<WifiNetDevice>(c.apDev.Get(0));
        w->GetPhy()->TraceConnectWithoutContext("PhyRxDrop", MakeCallback(&OnApRxDrop));
        w->GetMac()->TraceConnectWithoutContext("PsduResponseTimeout", MakeCallback(&OnApPsduTimeout));
        w->GetMac()->TraceConnectWithoutContext("MpduResponseTimeout", MakeCallback(&OnApMpduTimeout));
        w->GetMac()->TraceConnectWithoutContext("PsduMapResponseTimeout", MakeCallback(&OnApMapTimeout));
    }
    for (uint32_t i = 0; i < nSta; i++) connect(c.staDev.Get(i), (int)i);

    Simulator::Stop(g_to);
    Simulator::Run();

    double window = (g_to - g_from).GetSeconds();
    std::vector<double> sta(nSta, 0.0);
    double total = 0, delaySum = 0;
    uint64_t delayN = 0;
    for (uint32_t i = 0; i < nSta; i++) {
        if (udp) {
            sta[i] = g_rx[i].bytes * 8.0 / window / 1e6;
            delaySum += g_rx[i].delaySum;
            delayN += g_rx[i].delayN;
        } else {
            sta[i] = (sinks[i]->GetTotalRx() - sinkAtFrom[i]) * 8.0 / window / 1e6;
        }
        total += sta[i];
    }
    auto mean = [](uint64_t num, uint64_t den) { return den ? (double)num / den : 0.0; };
    std::ostringstream o;
    o << std::setprecision(6);
    o << "{\"mode\": \"" << mode << "\", \"n\": " << nSta << ", \"mcs\": " << mcs << ", \"nss\": " << nss
      << ", \"width\": " << width << ", \"gi\": " << gi << ", \"n_stations\": " << nStations << ", \"ack\": \"" << ack
      << "\", \"traffic\": \"" << (udp ? "udp" : "tcp") << "\", \"down\": " << (down ? "true" : "false")
      << ", \"seed\": " << seed << ", \"window_s\": " << window << ", \"associated\": " << associatedAtFrom;
    o << ", \"goodput_mbps\": " << total << ", \"sta_goodput_mbps\": [";
    for (uint32_t i = 0; i < nSta; i++) o << (i ? ", " : "") << sta[i];
    o << "], \"mean_delay_ms\": ";
    if (delayN) o << delaySum / delayN * 1e3; else o << "null";
    o << ", \"mu_ppdus\": " << g_c.mu << ", \"users_per_mu_ppdu\": " << mean(g_c.muUsers, g_c.mu) << ", \"ru_hist\": {";
    bool first = true;
    for (auto& [tones, n] : g_c.ruHist) {
        o << (first ? "" : ", ") << "\"" << tones << "\": " << n;
        first = false;
    }
    o << "}, \"mpdus_per_mu_user\": " << mean(g_c.muUserMpdus, g_c.muUsers) << ", \"mu_bar_in_mu\": " << g_c.muBarInMu
      << ", \"tb_ppdus\": " << g_c.tb << ", \"tb_events\": " << g_c.tbStarts.size() << ", \"tb_ba\": " << g_c.tbBa
      << ", \"tb_data\": " << g_c.tbData << ", \"tb_qos_null\": " << g_c.tbQosNull
      << ", \"mpdus_per_tb_data\": " << mean(g_c.tbDataMpdus, g_c.tbData) << ", \"tb_ru_hist\": {";
    first = true;
    for (auto& [tones, n] : g_c.tbRuHist) {
        o << (first ? "" : ", ") << "\"" << tones << "\": " << n;
        first = false;
    }
    o << "}, \"triggers_mu_bar\": " << g_c.trigMuBar
      << ", \"triggers_basic\": " << g_c.trigBasic << ", \"triggers_bsrp\": " << g_c.trigBsrp << ", \"bars\": " << g_c.bars
      << ", \"bas\": " << g_c.bas << ", \"multi_sta_bas\": " << g_c.multiStaBas << ", \"acks\": " << g_c.acks
      << ", \"su_ppdus\": " << g_c.su << ", \"su_data_ppdus\": " << g_c.suData
      << ", \"mpdus_per_su_data\": " << mean(g_c.suDataMpdus, g_c.suData) << ", \"dur_us\": {";
    first = true;
    for (auto& [k, e] : g_c.dur) {
        o << (first ? "" : ", ") << "\"" << k << "\": " << (e.second ? e.first / e.second : 0.0);
        first = false;
    }
    o << "}, \"ap_psdu_timeouts\": " << g_apPsduTimeouts << ", \"ap_mpdu_timeouts\": " << g_apMpduTimeouts
      << ", \"ap_map_timeouts\": " << g_apMapTimeouts << ", \"ap_map_missing\": " << g_apMapMissing
      << ", \"ap_rx_drop\": {";
    first = true;
    for (auto& [k, n] : g_apRxDrop) {
        o << (first ? "" : ", ") << "\"" << k << "\": " << n;
        first = false;
    }
    o << "}}";
    std::cout << o.str() << std::endl;
    Simulator::Destroy();
    return 0;
}
