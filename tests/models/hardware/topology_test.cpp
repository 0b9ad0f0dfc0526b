#include <catch2/catch.hpp>

#include <vector>

#include "models/hardware/topology.hpp"

using namespace ccsim::models;

namespace {

DeviceId add(Topology& t, DeviceKind kind, int node = 0, int local = 0) {
  Device d;
  d.kind = kind;
  d.node = node;
  d.local = local;
  return t.add_device(d);
}

LinkAttrs link(LinkClass c, double bandwidth, double latency) { return LinkAttrs{c, "test", 1, bandwidth, latency, {}}; }

}  // namespace

TEST_CASE("a route's latency is the sum and its bandwidth the minimum over links", "[topology]") {
  // g0 --(100 GB/s, 1 us)-- sw --(40 GB/s, 2 us)-- g1
  Topology t;
  const DeviceId g0 = add(t, DeviceKind::Gpu, 0, 0);
  const DeviceId g1 = add(t, DeviceKind::Gpu, 0, 1);
  const DeviceId sw = add(t, DeviceKind::PcieSwitch);
  t.add_link(g0, sw, link(LinkClass::Pcie, 100e9, 1e-6));
  t.add_link(sw, g1, link(LinkClass::Pcie, 40e9, 2e-6));
  const Route r = t.route(g0, g1);
  REQUIRE(r.path.links.size() == 2);
  CHECK(r.path.latency == Approx(3e-6));  // 1 us + 2 us
  CHECK(r.path.bandwidth == 40e9);        // min(100, 40) GB/s
  CHECK(r.path.type == PathType::Pix);    // one PCIe switch
  CHECK(r.ecmp_paths == 1.0);
  // The reverse direction uses the paired links.
  const Route back = t.route(g1, g0);
  CHECK(back.path.links[0] == Topology::reverse(r.path.links[1]));
}

TEST_CASE("GPUs are never transit devices", "[topology]") {
  // g0 - g2 - g1 by NVLink (0.6 us in total) and g0 - sw - g1 by PCIe (10 us in total):
  // the PCIe path wins because the route may not pass through g2.
  Topology t;
  const DeviceId g0 = add(t, DeviceKind::Gpu, 0, 0);
  const DeviceId g1 = add(t, DeviceKind::Gpu, 0, 1);
  const DeviceId g2 = add(t, DeviceKind::Gpu, 0, 2);
  const DeviceId sw = add(t, DeviceKind::PcieSwitch);
  t.add_link(g0, g2, link(LinkClass::ScaleUp, 300e9, 0.3e-6));
  t.add_link(g2, g1, link(LinkClass::ScaleUp, 300e9, 0.3e-6));
  t.add_link(g0, sw, link(LinkClass::Pcie, 30e9, 5e-6));
  t.add_link(sw, g1, link(LinkClass::Pcie, 30e9, 5e-6));
  const Route r = t.route(g0, g1);
  CHECK(r.path.latency == Approx(10e-6));
  CHECK(t.link_target(r.path.links[0]) == sw);
}

TEST_CASE("equal-latency paths tie-break on link class, then count as ECMP", "[topology]") {
  // Two 2-hop paths of equal latency from a to b: through an NVSwitch (scale-up links) and
  // through a PCIe switch. The scale-up one wins (class order NVLink < PCIe).
  Topology t;
  const DeviceId a = add(t, DeviceKind::Gpu, 0, 0);
  const DeviceId b = add(t, DeviceKind::Gpu, 0, 1);
  const DeviceId nvs = add(t, DeviceKind::NvSwitch);
  const DeviceId pcie = add(t, DeviceKind::PcieSwitch);
  t.add_link(a, pcie, link(LinkClass::Pcie, 10e9, 1e-6));
  t.add_link(pcie, b, link(LinkClass::Pcie, 10e9, 1e-6));
  t.add_link(a, nvs, link(LinkClass::ScaleUp, 10e9, 1e-6));
  t.add_link(nvs, b, link(LinkClass::ScaleUp, 10e9, 1e-6));
  const Route r = t.route(a, b);
  CHECK(r.path.type == PathType::Nvl);
  CHECK(r.ecmp_paths == 1.0);

  // Diamond of network switches: a-s1-b and a-s2-b identical: two ECMP paths, both listed.
  Topology d;
  const DeviceId x = add(d, DeviceKind::Gpu, 0, 0);
  const DeviceId y = add(d, DeviceKind::Gpu, 1, 0);
  const DeviceId s1 = add(d, DeviceKind::NetworkSwitch, -1, 0);
  const DeviceId s2 = add(d, DeviceKind::NetworkSwitch, -1, 1);
  for (DeviceId s : {s1, s2}) {
    d.add_link(x, s, link(LinkClass::Network, 50e9, 1e-6));
    d.add_link(s, y, link(LinkClass::Network, 50e9, 1e-6));
  }
  const Route e = d.route(x, y, 8);
  CHECK(e.ecmp_paths == 2.0);
  REQUIRE(e.alternatives.size() == 2);
  CHECK(d.link_target(e.alternatives[0].links[0]) == s1);
  CHECK(d.link_target(e.alternatives[1].links[0]) == s2);
  CHECK(e.path.type == PathType::Net);
}

TEST_CASE("GPUs without peer-to-peer stage through their CPU when memory is not modelled", "[topology]") {
  // g0, g1 under one PCIe switch, switch under the CPU. With P2P the path is g0-sw-g1 (PIX);
  // without, it is g0-sw-cpu-sw-g1 (PHB), four links.
  for (bool p2p : {true, false}) {
    Topology t;
    const DeviceId cpu = add(t, DeviceKind::Cpu);
    const DeviceId sw = add(t, DeviceKind::PcieSwitch);
    Device g;
    g.kind = DeviceKind::Gpu;
    g.node = 0;
    g.cpu = cpu;
    g.p2p = p2p;
    const DeviceId g0 = t.add_device(g);
    g.local = 1;
    const DeviceId g1 = t.add_device(g);
    t.add_link(sw, cpu, link(LinkClass::Pcie, 16e9, 0.5e-6));
    t.add_link(g0, sw, link(LinkClass::Pcie, 16e9, 0.5e-6));
    t.add_link(g1, sw, link(LinkClass::Pcie, 16e9, 0.5e-6));
    const Route r = t.route(g0, g1);
    CHECK(r.path.links.size() == (p2p ? 2U : 4U));
    CHECK(r.path.type == (p2p ? PathType::Pix : PathType::Phb));
    CHECK(r.path.latency == Approx(p2p ? 1e-6 : 2e-6));
  }
}

TEST_CASE("max-flow between device sets", "[topology]") {
  // Star: g0, g1 -> sw (10 and 20 GB/s) -> g2, g3 (15 and 25 GB/s).
  // Max-flow {g0, g1} -> {g2, g3} = min(10 + 20, 15 + 25) = 30 GB/s;
  // {g0} -> {g2, g3} = 10 GB/s; {g0, g1} -> {g2} = 15 GB/s.
  Topology t;
  const DeviceId g0 = add(t, DeviceKind::Gpu, 0, 0);
  const DeviceId g1 = add(t, DeviceKind::Gpu, 0, 1);
  const DeviceId g2 = add(t, DeviceKind::Gpu, 0, 2);
  const DeviceId g3 = add(t, DeviceKind::Gpu, 0, 3);
  const DeviceId sw = add(t, DeviceKind::NvSwitch);
  t.add_link(g0, sw, link(LinkClass::ScaleUp, 10e9, 0));
  t.add_link(g1, sw, link(LinkClass::ScaleUp, 20e9, 0));
  t.add_link(g2, sw, link(LinkClass::ScaleUp, 15e9, 0));
  t.add_link(g3, sw, link(LinkClass::ScaleUp, 25e9, 0));
  const std::vector<DeviceId> left{g0, g1}, right{g2, g3}, only_g0{g0}, only_g2{g2};
  CHECK(t.max_flow(left, right) == 30e9);
  CHECK(t.max_flow(only_g0, right) == 10e9);
  CHECK(t.max_flow(left, only_g2) == 15e9);
  // Restricted to PCIe links there is no path at all.
  CHECK(t.max_flow(left, right, 1U << static_cast<unsigned>(LinkClass::Pcie)) == 0.0);
  CHECK_THROWS_AS(t.max_flow(left, left), std::invalid_argument);
}

TEST_CASE("bad links are rejected", "[topology]") {
  Topology t;
  const DeviceId a = add(t, DeviceKind::Gpu);
  const DeviceId b = add(t, DeviceKind::Gpu);
  CHECK_THROWS_AS(t.add_link(a, b, link(LinkClass::Pcie, 0.0, 1e-6)), std::invalid_argument);
  CHECK_THROWS_AS(t.add_link(a, b, link(LinkClass::Pcie, -5e9, 1e-6)), std::invalid_argument);
  CHECK_THROWS_AS(t.add_link(a, b, link(LinkClass::Pcie, 5e9, -1.0)), std::invalid_argument);
  CHECK_THROWS_AS(t.add_link(a, a, link(LinkClass::Pcie, 5e9, 1e-6)), std::invalid_argument);
  CHECK_THROWS_AS(t.route(a, b), std::runtime_error);  // not connected
}

TEST_CASE("staged traffic lands in the receiving GPU's socket memory", "[topology][host-memory]") {
  // cpu0 - cpu1 by a socket link; each CPU has its memory (mem0, mem1) and one GPU, no P2P.
  // g0 -> g1 is written into g1's socket memory and read from there:
  //   g0 -> cpu0 -> cpu1 -> mem1 -> cpu1 -> g1  (SYS: crosses the socket link; the memory
  //   links alone do not make a path SYS), latency 0.5 + 1 + 0.1 + 0.1 + 0.5 = 2.2 us.
  Topology t;
  const DeviceId cpu0 = add(t, DeviceKind::Cpu, 0, 0);
  const DeviceId cpu1 = add(t, DeviceKind::Cpu, 0, 1);
  const DeviceId mem0 = add(t, DeviceKind::Memory, 0, 0);
  const DeviceId mem1 = add(t, DeviceKind::Memory, 0, 1);
  t.device(cpu0).memory = mem0;
  t.device(cpu1).memory = mem1;
  t.add_link(cpu0, mem0, link(LinkClass::Host, 100e9, 0.1e-6));
  t.add_link(cpu1, mem1, link(LinkClass::Host, 100e9, 0.1e-6));
  t.add_link(cpu0, cpu1, link(LinkClass::Host, 60e9, 1e-6));
  Device g;
  g.kind = DeviceKind::Gpu;
  g.node = 0;
  g.p2p = false;
  g.cpu = cpu0;
  const DeviceId g0 = t.add_device(g);
  g.local = 1;
  g.cpu = cpu1;
  const DeviceId g1 = t.add_device(g);
  t.add_link(g0, cpu0, link(LinkClass::Pcie, 50e9, 0.5e-6));
  t.add_link(g1, cpu1, link(LinkClass::Pcie, 50e9, 0.5e-6));

  const Route r = t.route(g0, g1);
  std::vector<DeviceId> hops{g0};
  for (LinkId id : r.path.links) hops.push_back(t.link_target(id));
  CHECK(hops == std::vector<DeviceId>{g0, cpu0, cpu1, mem1, cpu1, g1});
  CHECK(r.path.type == PathType::Sys);
  CHECK(r.path.latency == Approx(2.2e-6));
  CHECK(r.path.bandwidth == 50e9);
  // Both directions of cpu1's memory link: written (cpu1 -> mem1), then read (mem1 -> cpu1).
  CHECK(t.link_source(r.path.links[2]) == cpu1);
  CHECK(r.path.links[3] == Topology::reverse(r.path.links[2]));

  // The same socket: g0 -> cpu0 -> mem0 -> cpu0 -> g2 is PHB, not SYS.
  g.local = 2;
  g.cpu = cpu0;
  const DeviceId g2 = t.add_device(g);
  t.add_link(g2, cpu0, link(LinkClass::Pcie, 50e9, 0.5e-6));
  const Route local = t.route(g0, g2);
  CHECK(local.path.links.size() == 4U);
  CHECK(local.path.type == PathType::Phb);
}
