// The cell both comparison harnesses build in ns-3 (3.37): one AP and `nSta` stations 1 m apart
// (no losses), constant MCS, RTS/CTS lifted by the caller, pre-filled ARP caches. `qdisc`, if
// given, installs the AP's traffic-control queue disc before addresses are assigned (ns-3 then
// keeps it instead of its default). A separate program's header; lasthop contains no ns-3 code.
#pragma once

#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/mobility-module.h"
#include "ns3/neighbor-cache-helper.h"
#include "ns3/network-module.h"
#include "ns3/wifi-module.h"

#include <functional>
#include <string>

struct Cell {
    ns3::NodeContainer ap, stas;
    ns3::NetDeviceContainer apDev, staDev;
    ns3::Ipv4InterfaceContainer apIf, staIf;
};

// `standard`: a | n | ac; for a, `mcs` is the rate index 0..7. `maxMpdus` sets BE_MaxAmpduSize to
// that many 1544-byte subframes (1: no aggregation).
inline Cell BuildCell(const std::string& standard, uint32_t nSta, uint32_t mcs, uint32_t nss, uint32_t width,
                      bool sgi, uint32_t maxMpdus, bool beacons,
                      const std::function<void(ns3::NetDeviceContainer&)>& qdisc = {}) {
    using namespace ns3;
    Cell c;
    NodeContainer& ap = c.ap;
    NodeContainer& stas = c.stas;
    ap.Create(1);
    stas.Create(nSta);

    YansWifiChannelHelper channel = YansWifiChannelHelper::Default();
    YansWifiPhyHelper phy;
    phy.SetChannel(channel.Create());
    phy.Set("Antennas", UintegerValue(nss));
    phy.Set("MaxSupportedTxSpatialStreams", UintegerValue(nss));
    phy.Set("MaxSupportedRxSpatialStreams", UintegerValue(nss));

    WifiHelper wifi;
    std::string dataMode, ctrlMode = "OfdmRate24Mbps";
    if (standard == "a") {
        wifi.SetStandard(WIFI_STANDARD_80211a);
        const char* rates[] = {"6", "9", "12", "18", "24", "36", "48", "54"};
        dataMode = std::string("OfdmRate") + rates[mcs] + "Mbps";
        phy.Set("ChannelSettings", StringValue("{36, 20, BAND_5GHZ, 0}"));
    } else if (standard == "n") {
        wifi.SetStandard(WIFI_STANDARD_80211n);
        dataMode = "HtMcs" + std::to_string(mcs + 8 * (nss - 1));
        phy.Set("ChannelSettings", StringValue(width == 40 ? "{38, 40, BAND_5GHZ, 0}" : "{36, 20, BAND_5GHZ, 0}"));
    } else {
        wifi.SetStandard(WIFI_STANDARD_80211ac);
        dataMode = "VhtMcs" + std::to_string(mcs);
        phy.Set("ChannelSettings", StringValue(width == 160 ? "{50, 160, BAND_5GHZ, 0}" : width == 80 ? "{42, 80, BAND_5GHZ, 0}" : width == 40 ? "{38, 40, BAND_5GHZ, 0}" : "{36, 20, BAND_5GHZ, 0}"));
    }
    wifi.SetRemoteStationManager("ns3::ConstantRateWifiManager", "DataMode", StringValue(dataMode),
                                 "ControlMode", StringValue(ctrlMode));

    WifiMacHelper mac;
    Ssid ssid("lasthop");
    bool qos = standard != "a";
    mac.SetType("ns3::StaWifiMac", "Ssid", SsidValue(ssid), "QosSupported", BooleanValue(qos));
    NetDeviceContainer& staDev = c.staDev;
    staDev = wifi.Install(phy, mac, stas);
    mac.SetType("ns3::ApWifiMac", "Ssid", SsidValue(ssid), "QosSupported", BooleanValue(qos),
                "EnableBeaconJitter", BooleanValue(false),
                "BeaconInterval", TimeValue(beacons ? MicroSeconds(102400) : MicroSeconds(1024 * 60000)));
    NetDeviceContainer& apDev = c.apDev;
    apDev = wifi.Install(phy, mac, ap);

    if (standard != "a") {
        Config::Set("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/HtConfiguration/ShortGuardIntervalSupported", BooleanValue(sgi));
        uint32_t ampdu = maxMpdus <= 1 ? 0 : maxMpdus * 1544;
        Config::Set("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Mac/BE_MaxAmpduSize", UintegerValue(ampdu));
        Config::Set("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Mac/BE_MaxAmsduSize", UintegerValue(0));
    }

    MobilityHelper mob;
    Ptr<ListPositionAllocator> pos = CreateObject<ListPositionAllocator>();
    pos->Add(Vector(0, 0, 0));
    for (uint32_t i = 0; i < nSta; i++) pos->Add(Vector(1.0, 0, 0));
    mob.SetPositionAllocator(pos);
    mob.SetMobilityModel("ns3::ConstantPositionMobilityModel");
    mob.Install(ap);
    mob.Install(stas);

    InternetStackHelper stack;
    stack.Install(ap);
    stack.Install(stas);
    if (qdisc) qdisc(apDev);
    Ipv4AddressHelper addr;
    addr.SetBase("10.1.0.0", "255.255.0.0");
    c.apIf = addr.Assign(apDev);
    c.staIf = addr.Assign(staDev);
    // Pre-filled ARP caches: with several flooding UDP clients, ARP requests and replies would
    // otherwise be lost in the full queues and some flows would never start.
    NeighborCacheHelper neighbors;
    neighbors.PopulateNeighborCache();
    return c;
}
