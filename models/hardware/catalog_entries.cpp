// The link, GPU and CPU entries of the catalog (links.yaml, gpus.yaml, cpus.yaml), read from
// their resolved layers; node templates are read in node_template.cpp.

#include "models/hardware/catalog.hpp"

#include "models/hardware/detail/catalog_detail.hpp"

namespace ccsim::models {
namespace {

using detail::kMaxLinks;

constexpr int kMaxMemoryChannels = 64;  // DRAM channels per socket: far above any built CPU

}  // namespace

LinkSpec Catalog::parse_link(const Resolved& r) const {
  const support::Fields& f = r.fields;
  f.reject_unknown({"base", "name", "source", "class", "bandwidth", "latency", "transports"});
  LinkSpec spec;
  spec.name = r.name;
  const std::string cls = f.choice("class", {"scale-up", "pcie", "host", "network"});
  spec.link_class = *parse_link_class(cls);
  spec.bandwidth = f.quantity("bandwidth", support::Quantity::Bandwidth, true);
  spec.latency = f.quantity("latency", support::Quantity::Time, false);
  if (const auto transports = f.optional_map("transports")) {
    if (spec.link_class != LinkClass::Network) throw f.error("transports", "no transports for a link of class " + cls);
    transports->reject_unknown({"gdr", "verbs", "socket"});
    for (NicTransport t : {NicTransport::Gdr, NicTransport::Verbs, NicTransport::Socket}) {
      if (transports->has(to_string(t))) {
        spec.transport_overhead[static_cast<std::size_t>(t)] = transports->quantity(to_string(t), support::Quantity::Time, false);
      }
    }
  }
  spec.source = f.optional_string("source").value_or("");
  spec.lineage = r.chain;
  return spec;
}

GpuSpec Catalog::parse_gpu(const Resolved& r) const {
  const support::Fields& f = r.fields;
  f.reject_unknown({"base", "name", "source", "vendor", "arch", "bf16_flops", "fp8_flops", "hbm_capacity",
                    "hbm_bandwidth", "sms", "scaleup", "host_link"});
  GpuSpec spec;
  spec.name = r.name;
  spec.vendor = f.string("vendor");
  spec.arch = f.string("arch");
  spec.bf16_flops = f.quantity("bf16_flops", support::Quantity::FlopRate, true);
  spec.fp8_flops = f.quantity("fp8_flops", support::Quantity::FlopRate, false, 0.0);
  spec.hbm_capacity = f.quantity("hbm_capacity", support::Quantity::Bytes, true);
  spec.hbm_bandwidth = f.quantity("hbm_bandwidth", support::Quantity::Bandwidth, true);
  spec.sms = f.count("sms", 1, 4096, 0);  // largest GPUs have a few hundred (MI300X: 304 CUs)
  spec.lineage = r.chain;
  if (const auto scaleup = f.optional_map("scaleup")) {
    scaleup->reject_unknown({"link", "links"});
    spec.scaleup_link = link(*scaleup, "link");
    if (spec.scaleup_link->link_class != LinkClass::ScaleUp) {
      throw scaleup->error("link", "a link of class scale-up (NVLink or xGMI)");
    }
    spec.scaleup_links = scaleup->count("links", 1, kMaxLinks);
  }
  spec.host_link = link(f, "host_link");
  if (spec.host_link.link_class != LinkClass::Pcie) throw f.error("host_link", "a link of class pcie");
  spec.source = f.optional_string("source").value_or("");
  return spec;
}

CpuSpec Catalog::parse_cpu(const Resolved& r) const {
  const support::Fields& f = r.fields;
  f.reject_unknown({"base", "name", "source", "memory"});
  CpuSpec spec;
  spec.name = r.name;
  spec.source = f.optional_string("source").value_or("");
  const support::Fields m = f.map("memory");
  m.reject_unknown({"kind", "channels", "channel_bandwidth", "efficiency", "latency"});
  spec.memory_kind = m.string("kind");
  spec.memory_channels = m.count("channels", 1, kMaxMemoryChannels);
  spec.channel_bandwidth = m.quantity("channel_bandwidth", support::Quantity::Bandwidth, true);
  spec.memory_efficiency = m.number("efficiency", 0.0);
  if (spec.memory_efficiency > 1.0) throw m.error("efficiency", "a fraction of the peak bandwidth in (0, 1]");
  spec.memory_latency = m.quantity("latency", support::Quantity::Time, false);
  return spec;
}

}  // namespace ccsim::models
