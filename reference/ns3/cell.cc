// Comparison harness: the same single-cell scenarios as lasthop's, run in ns-3 (3.37, the
// Debian package libns3-dev). This is a separate program that uses ns-3 as a library; it is not
// part of lasthop and lasthop contains no ns-3 code. See reference/ns3/README.md.
//
// One AP and n stations, all 1 m apart (no losses), constant MCS, saturated UDP (1472-byte
// payload = 1500-byte IP packets) downlink (AP -> each station) or uplink (each station -> AP).
// Prints: goodput_bps (IP level, summed over stations, measured from `warmup` to the end).

#include "cell_common.h"

#include "ns3/applications-module.h"

using namespace ns3;

int main(int argc, char* argv[]) {
    std::string standard = "ac";  // a | n | ac
    uint32_t nSta = 1, mcs = 9, nss = 1, width = 80, maxMpdus = 64;
    bool sgi = false, down = true, beacons = true;
    double simTime = 8.0, warmup = 3.0;
    uint32_t seed = 1;
    CommandLine cmd(__FILE__);
    cmd.AddValue("standard", "a | n | ac", standard);
    cmd.AddValue("n", "stations", nSta);
    cmd.AddValue("mcs", "MCS (for a: rate index 0..7)", mcs);
    cmd.AddValue("nss", "spatial streams", nss);
    cmd.AddValue("width", "MHz", width);
    cmd.AddValue("sgi", "short guard interval", sgi);
    cmd.AddValue("down", "downlink (else uplink)", down);
    cmd.AddValue("maxMpdus", "MPDUs per A-MPDU (sets BE_MaxAmpduSize to that many 1544-byte subframes)", maxMpdus);
    cmd.AddValue("time", "simulated seconds", simTime);
    cmd.AddValue("warmup", "seconds before measuring (ns-3 needs ~2 s to reach steady state)", warmup);
    cmd.AddValue("seed", "run number", seed);
    cmd.AddValue("beacons", "send beacons", beacons);
    cmd.Parse(argc, argv);
    // lasthop does not model RTS/CTS (as Linux drivers, whose RTS threshold is off by default);
    // ns-3 follows the MIB default of 65535 octets, so lift it for a like-for-like comparison.
    Config::SetDefault("ns3::WifiRemoteStationManager::RtsCtsThreshold", UintegerValue(4692480));
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    Cell c = BuildCell(standard, nSta, mcs, nss, width, sgi, maxMpdus, beacons);
    NodeContainer& ap = c.ap;
    NodeContainer& stas = c.stas;
    Ipv4InterfaceContainer& apIf = c.apIf;
    Ipv4InterfaceContainer& staIf = c.staIf;

    std::vector<Ptr<UdpServer>> servers;
    for (uint32_t i = 0; i < nSta; i++) {
        uint16_t port = 9000 + i;
        Ptr<Node> srvNode = down ? stas.Get(i) : ap.Get(0);
        Ptr<Node> cliNode = down ? ap.Get(0) : stas.Get(i);
        Ipv4Address dst = down ? staIf.GetAddress(i) : apIf.GetAddress(0);
        UdpServerHelper srv(port);
        ApplicationContainer s = srv.Install(srvNode);
        s.Start(Seconds(0.0));
        servers.push_back(DynamicCast<UdpServer>(s.Get(0)));
        UdpClientHelper cli(dst, port);
        cli.SetAttribute("MaxPackets", UintegerValue(4294967295u));
        cli.SetAttribute("Interval", TimeValue(MicroSeconds(standard == "a" ? 100 : 5)));
        cli.SetAttribute("PacketSize", UintegerValue(1472));
        ApplicationContainer c = cli.Install(cliNode);
        c.Start(Seconds(0.1 + 0.001 * i));
    }
    std::vector<uint64_t> at1(nSta, 0);
    Simulator::Schedule(Seconds(warmup), [&]() {
        for (uint32_t i = 0; i < nSta; i++) at1[i] = servers[i]->GetReceived();
    });
    Simulator::Stop(Seconds(simTime));
    Simulator::Run();
    uint64_t total = 0;
    for (uint32_t i = 0; i < nSta; i++) total += servers[i]->GetReceived() - at1[i];
    double goodput = total * 1500.0 * 8 / (simTime - warmup);
    std::cout << "goodput_bps " << goodput << std::endl;
    Simulator::Destroy();
    return 0;
}
