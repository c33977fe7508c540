// Comparison harness: one cell with a given UDP load per station, run in ns-3 (3.37, the Debian
// package libns3-dev). This is a separate program that uses ns-3 as a library; it is not part
// of lasthop and lasthop contains no ns-3 code. See reference/ns3/README.md.
//
// One AP and n stations 1 m apart (no losses), constant MCS, CBR UDP downlink (AP -> each
// station) with 1500-byte IP packets: station 0 offered `rate0` Mb/s, the others `rate` Mb/s.
// The AP's traffic-control root qdisc is `qdisc` (fq_codel | fifo) with `limit` packets, above
// ns-3's per-AC WifiMacQueue (500 packets) with flow control between them.
// Prints one line per station: "sta <i> goodput_bps <x> loss <fraction> mean_delay_s <x>
// p99_delay_s <x>", then "ampdu_mean <MPDUs per downlink data PSDU>". Packets count when sent
// between `warmup` and `time - 0.5 s`; delay is one-way, from the UDP client to the server.

#include "cell_common.h"

#include "ns3/applications-module.h"
#include "ns3/traffic-control-module.h"

#include <algorithm>

using namespace ns3;

struct Rx {
    Time start, interval;
    uint32_t first = 0, last = 0;
    uint64_t received = 0;
    std::vector<double> delays;
};

static std::vector<Rx> g_rx;
static uint64_t g_psdus = 0, g_mpdus = 0;
static Time g_warmup;

static void OnRx(uint32_t i, Ptr<const Packet> p) {
    SeqTsHeader h;
    p->PeekHeader(h);
    Rx& r = g_rx[i];
    if (h.GetSeq() < r.first || h.GetSeq() > r.last) return;
    r.received++;
    r.delays.push_back((Simulator::Now() - h.GetTs()).GetSeconds());
}

static void OnPsdu(WifiConstPsduMap psdus, WifiTxVector, double) {
    if (Simulator::Now() < g_warmup) return;
    for (auto& [id, psdu] : psdus) {
        if (psdu->GetNMpdus() == 0 || !psdu->GetHeader(0).IsQosData()) continue;
        g_psdus++;
        g_mpdus += psdu->GetNMpdus();
    }
}

int main(int argc, char* argv[]) {
    std::string standard = "ac", qdisc = "fq_codel";
    uint32_t nSta = 1, mcs = 9, nss = 2, width = 80, maxMpdus = 64, limit = 1000;
    double rate = 100, rate0 = -1, simTime = 8.0, warmup = 3.0;
    uint32_t seed = 1;
    CommandLine cmd(__FILE__);
    cmd.AddValue("standard", "n | ac", standard);
    cmd.AddValue("n", "stations", nSta);
    cmd.AddValue("mcs", "MCS", mcs);
    cmd.AddValue("nss", "spatial streams", nss);
    cmd.AddValue("width", "MHz", width);
    cmd.AddValue("maxMpdus", "MPDUs per A-MPDU (BE_MaxAmpduSize = that many 1544-byte subframes)", maxMpdus);
    cmd.AddValue("rate", "offered Mb/s per station", rate);
    cmd.AddValue("rate0", "offered Mb/s to station 0 (default: rate)", rate0);
    cmd.AddValue("qdisc", "fq_codel | fifo (the AP's root queue disc)", qdisc);
    cmd.AddValue("limit", "packets in the AP's root queue disc", limit);
    cmd.AddValue("time", "simulated seconds", simTime);
    cmd.AddValue("warmup", "seconds before measuring", warmup);
    cmd.AddValue("seed", "run number", seed);
    cmd.Parse(argc, argv);
    if (rate0 < 0) rate0 = rate;
    Config::SetDefault("ns3::WifiRemoteStationManager::RtsCtsThreshold", UintegerValue(4692480));
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);
    g_warmup = Seconds(warmup);

    Cell c = BuildCell(standard, nSta, mcs, nss, width, false, maxMpdus, true, [&](NetDeviceContainer& apDev) {
        TrafficControlHelper tch;
        std::string lim = std::to_string(limit) + "p";
        if (qdisc == "fifo") {
            tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue(lim));
        } else {
            tch.SetRootQueueDisc("ns3::FqCoDelQueueDisc", "MaxSize", StringValue(lim));
        }
        tch.Install(apDev);
    });
    NodeContainer& ap = c.ap;
    NodeContainer& stas = c.stas;
    Ipv4InterfaceContainer& staIf = c.staIf;

    g_rx.resize(nSta);
    for (uint32_t i = 0; i < nSta; i++) {
        uint16_t port = 9000 + i;
        UdpServerHelper srv(port);
        ApplicationContainer s = srv.Install(stas.Get(i));
        s.Start(Seconds(0.0));
        s.Get(0)->TraceConnectWithoutContext("Rx", MakeBoundCallback(&OnRx, i));
        double mbps = i == 0 ? rate0 : rate;
        Time interval = Seconds(1500.0 * 8 / (mbps * 1e6));
        Rx& r = g_rx[i];
        r.start = Seconds(0.1 + 0.001 * i);
        r.interval = interval;
        r.first = (uint32_t)std::ceil((warmup - r.start.GetSeconds()) / interval.GetSeconds());
        r.last = (uint32_t)std::floor((simTime - 0.5 - r.start.GetSeconds()) / interval.GetSeconds());
        UdpClientHelper cli(staIf.GetAddress(i), port);
        cli.SetAttribute("MaxPackets", UintegerValue(4294967295u));
        cli.SetAttribute("Interval", TimeValue(interval));
        cli.SetAttribute("PacketSize", UintegerValue(1472));
        ApplicationContainer c = cli.Install(ap.Get(0));
        c.Start(r.start);
    }
    Config::ConnectWithoutContext("/NodeList/0/DeviceList/*/$ns3::WifiNetDevice/Phy/PhyTxPsduBegin", MakeCallback(&OnPsdu));
    Simulator::Stop(Seconds(simTime));
    Simulator::Run();
    for (uint32_t i = 0; i < nSta; i++) {
        Rx& r = g_rx[i];
        uint64_t sent = r.last >= r.first ? r.last - r.first + 1 : 0;
        double span = (r.last - r.first + 1) * r.interval.GetSeconds();
        double mean = 0, p99 = 0;
        if (!r.delays.empty()) {
            for (double d : r.delays) mean += d;
            mean /= r.delays.size();
            std::sort(r.delays.begin(), r.delays.end());
            p99 = r.delays[std::min(r.delays.size() - 1, (size_t)(0.99 * r.delays.size()))];
        }
        std::cout << "sta " << i << " goodput_bps " << r.received * 1500.0 * 8 / span << " loss "
                  << (sent ? 1.0 - (double)r.received / sent : 0.0) << " mean_delay_s " << mean
                  << " p99_delay_s " << p99 << std::endl;
    }
    std::cout << "ampdu_mean " << (g_psdus ? (double)g_mpdus / g_psdus : 0.0) << std::endl;
    Simulator::Destroy();
    return 0;
}
