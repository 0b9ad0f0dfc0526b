#include "models/hardware/failure_rates.hpp"

#include <array>

namespace ccsim::models {
namespace {

// Meta's snapshot (arXiv 2407.21783, Table 5): 16,384 GPUs = 16,384 NICs = 2,048 nodes, 54 days.
constexpr double kSnapshotYears = 54.0 / 365.0;
constexpr double kGpus = 16384, kNics = 16384, kNodes = 2048;

constexpr double per_year(int count, double units) { return count / (units * kSnapshotYears); }

constexpr std::array<FailureClass, 7> kClasses{{
    {"gpu", FailureUnit::Gpu, per_year(196, kGpus), 196, true,
     "faulty GPU 148, GPU SRAM memory 19, GPU system processor 17, silent data corruption 6, GPU thermal interface and sensor 6"},
    {"hbm", FailureUnit::Gpu, per_year(72, kGpus), 72, true, "GPU HBM3 memory 72"},
    {"nic", FailureUnit::Nic, per_year(7, kNics), 7, true, "network interface card 7"},
    {"network", FailureUnit::Nic, per_year(35, kNics), 35, false,
     "network switch and cable 35 (Meta counts them together; ccsim spreads them over the job's NICs, one scale-out port each)"},
    {"host", FailureUnit::Node, per_year(46, kNodes), 46, true,
     "host maintenance 32, SSD 3, power supply 3, server chassis 2, IO expansion board 2, CPU 2, system memory 2"},
    {"software", FailureUnit::Node, per_year(63, kNodes), 63, false, "software bug 54, NCCL watchdog timeouts 7, dependency 2"},
    {"maintenance", FailureUnit::Node, per_year(47, kNodes), 47, false, "planned interruptions (automated maintenance) 47"},
}};

}  // namespace

std::span<const FailureClass> failure_classes() { return kClasses; }

const FailureClass* find_failure_class(std::string_view name) {
  for (const FailureClass& c : kClasses)
    if (c.name == name) return &c;
  return nullptr;
}

std::string_view failure_unit_name(FailureUnit u) {
  switch (u) {
    case FailureUnit::Gpu: return "GPU";
    case FailureUnit::Nic: return "NIC";
    case FailureUnit::Node: return "node";
  }
  return "node";
}

}  // namespace ccsim::models
