// NIC transports: the per-message overhead of verbs without GPUDirect RDMA
// and of TCP sockets, and the host bounce of both, in simulated collective times.
#include <catch2/catch.hpp>

#include <string>

#include "planner/collective/collective_runner.hpp"
#include "planner/tuning/cost_model.hpp"
#include "test_support.hpp"

using namespace ccsim;

namespace {

const planner::CostModel& default_costs() {
  static const planner::CostModel costs = planner::CostModel::load(planner::CostModel::default_path());
  return costs;
}

models::Cluster two_nodes(const std::string& transport) {
  return models::build_cluster(
      models::load_scenario(test::source_path("tests/data/transports/h100-2node-" + transport + ".yaml"),
                            test::shipped_catalog())
          .cluster);
}

/// Time of an 8-byte Ring/Simple AllReduce between GPU 0 of node 0 and GPU 0 of node 1, seconds.
double small_allreduce(const models::Cluster& c) {
  planner::CollectiveOptions o;
  o.collective = models::Collective::AllReduce;
  o.algorithm = planner::Algorithm::Ring;
  o.protocol = planner::Protocol::Simple;
  o.gpus = {c.topology.gpus()[0], c.topology.gpus()[8]};
  planner::CollectiveRunner runner(c, default_costs(), o);
  return runner.run(8).time;
}

}  // namespace

TEST_CASE("NIC transport: the catalog's figures reach the node and the NIC ports", "[transport]") {
  const models::NodeSpec h100 = test::shipped_catalog().node("dgx-h100");
  CHECK(h100.nic_transport == models::NicTransport::Gdr);  // default: GDR (ConnectX-7, P2P GPUs)
  CHECK(h100.nic_transport_overhead == 0.0);
  // GeForce (no P2P): GDR unavailable, so the default falls back to verbs through host memory.
  const YAML::Node geforce = YAML::Load("{base: rtx5090-8gpu, nics: {link: roce-400g, count: 2}}");
  const models::NodeSpec rtx = test::shipped_catalog().node(support::YamlSource{geforce, nullptr}, "node");
  CHECK(rtx.nic_transport == models::NicTransport::Verbs);
  CHECK(rtx.nic_transport_overhead == Approx(3.5e-6));

  const models::Cluster verbs = two_nodes("verbs");
  CHECK(verbs.spec.groups[0].node.nic_transport == models::NicTransport::Verbs);
  CHECK(verbs.spec.groups[0].node.nic_transport_overhead == Approx(3.5e-6));
  // The NIC -> switch port carries half the overhead on top of ib-ndr's 0.35 us wire latency.
  const models::Topology& t = verbs.topology;
  const models::DeviceId nic = t.device(t.gpus()[0]).nic;
  REQUIRE(t.device(nic).host_bounce);
  bool found = false;
  for (models::LinkId id : t.out_links(nic)) {
    if (t.link(id).link_class != models::LinkClass::Network) continue;
    CHECK(t.link(id).latency == Approx(0.35e-6 + 3.5e-6 / 2));
    found = true;
  }
  CHECK(found);
}

TEST_CASE("NIC transport: small-message time differences equal the configured overheads", "[transport]") {
  // 2 ranks on 2 nodes, Ring AllReduce, Simple, 8 bytes: 2(n − 1) = 2 steps in sequence, each
  // one GPU → NIC → switch → NIC → GPU transfer; everything else (base latency, step overhead of
  // the network class, the 8-byte transfer time) is the same for every transport, so
  //   t(socket) − t(verbs) = 2 × (16.5 − 3.5) us = 26 us          (same host-bounce paths)
  //   t(verbs) − t(gdr)    = 2 × (3.5 us + bounce wire latency)
  // where the bounce adds, at each end, GPU → PCIe switch → CPU → memory → CPU → PCIe switch →
  // NIC (4 × 0.5 us PCIe + 2 × 0.1 us memory) instead of GPU → PCIe switch → NIC (2 × 0.5 us):
  // 1.2 us per end, 2.4 us per step: t(verbs) − t(gdr) = 2 × 5.9 us = 11.8 us.
  const double gdr = small_allreduce(two_nodes("gdr"));
  const double verbs = small_allreduce(two_nodes("verbs"));
  const double socket = small_allreduce(two_nodes("socket"));
  CHECK(socket - verbs == Approx(2 * (16.5e-6 - 3.5e-6)).epsilon(1e-3));
  CHECK(verbs - gdr == Approx(2 * (3.5e-6 + 2 * (4 * 0.5e-6 + 2 * 0.1e-6 - 2 * 0.5e-6))).epsilon(1e-3));
}

TEST_CASE("NIC transport: without GPUDirect RDMA the data bounces through both sockets' memory", "[transport][host-memory]") {
  // verbs and socket: GPU -> PCIe switch -> CPU -> memory -> CPU -> PCIe switch -> NIC on the
  // sending node and the mirror image on the receiving one, so the bounce shares the socket's
  // memory link (written, then read) with staged GPU traffic; gdr goes GPU -> switch -> NIC.
  for (const char* transport : {"gdr", "verbs", "socket"}) {
    INFO(transport);
    const models::Cluster c = two_nodes(transport);
    const models::Topology& t = c.topology;
    const models::DeviceId src = t.gpus()[0];
    const models::DeviceId dst = t.gpus()[8];
    const models::Route r = t.route(src, dst);
    int memory_links = 0;
    for (models::LinkId id : r.path.links) {
      if (t.device(t.link_target(id)).kind == models::DeviceKind::Memory ||
          t.device(t.link_source(id)).kind == models::DeviceKind::Memory) {
        ++memory_links;
      }
    }
    const bool bounce = std::string(transport) != "gdr";
    CHECK(memory_links == (bounce ? 4 : 0));  // each side: CPU -> memory, memory -> CPU
    CHECK(r.path.links.size() == (bounce ? 14U : 6U));
  }
}
