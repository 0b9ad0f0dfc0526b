#pragma once
// What-if perturbations of a built cluster: GPUs that compute slower than their model (a
// straggler, a throttled node, a slow HBM), links that carry less than their nominal bandwidth
// (a degraded cable, a NIC port running at a lower rate) and NICs that have failed (NCCL moves
// the GPUs that used one onto another NIC of the node). The rules come from a scenario's
// `what_if:` section (models/scenario/what_if_section.hpp); apply_what_if resolves their
// selectors against the Topology's device names and changes the Cluster in place.
//
// Perturbed hardware is never treated as alike with the unperturbed: a changed link with an
// end in a node gives that node a node class of its own (Topology::set_bandwidth), a NIC
// failover splits its node's class, and the workload runner groups ranks by their GPU's
// ComputeSpeed as well as by their hardware, so every cache that shares results between alike
// nodes or ranks sees the perturbed ones as different.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "models/hardware/cluster.hpp"
#include "support/input_error.hpp"

namespace ccsim::models {

/// Op kinds a compute rule applies to (bit set).
enum ComputeOps : unsigned { kGemmOps = 1U, kAttentionOps = 2U, kMemoryOps = 4U, kAllOps = 7U };

/// "gemm, attention, memory", the kinds in `ops` (bit set of ComputeOps), or "all ops".
std::string describe_ops(unsigned ops);

/// GPUs that compute at `speed` × their nominal speed on the op kinds `ops`. Exactly one
/// selector is set: `gpus` (a device-name pattern: "node3/gpu2", "node1/gpu*"), `nodes` (a node
/// pattern: "node1", "node1?") or `group` (the index of a `cluster.nodes` entry, from 0).
/// Patterns are shell wildcards (`*`, `?`, `[...]`, fnmatch(3)).
struct ComputeRule {
  std::string gpus;
  std::string nodes;
  int group = -1;
  double speed = 1.0;        ///< > 0; 0.5 = each op twice as long
  unsigned ops = kAllOps;
  support::SourceLocation where;  ///< the rule in the scenario (errors)
  std::string key;                ///< its key path, "what_if.compute[0]"
};

/// `count` GPUs drawn uniformly without replacement (seeded, reproducible on every platform:
/// std::mt19937_64 and a Fisher–Yates draw), each at `speed` × nominal on `ops`.
struct StragglerRule {
  int count = 1;
  double speed = 1.0;
  std::uint64_t seed = 0;
  unsigned ops = kAllOps;
  support::SourceLocation where;
  std::string key;
};

/// Links selected by every selector that is set (at least one is): `from`/`to` device-name
/// patterns of the link's two ends (one direction, or both with `both_directions`), `device`
/// (a pattern: every link with an end at a matching device, both directions: a NIC, a switch,
/// a GPU) and `kind` (a pattern on the link kind: "nvlink4", "ib-ndr", "pcie-*"). `factor`
/// multiplies their bandwidth; `fail` takes them down, both directions (see apply_what_if).
struct LinkRule {
  std::string from, to;
  bool both_directions = false;
  std::string device;
  std::string kind;
  double factor = 1.0;  ///< > 0
  bool fail = false;
  /// A timed rule (`at:`) holds during [at, at + duration) seconds from the start of a workload
  /// step, again every `every` seconds when that is set (a flapping link); duration +inf when
  /// `for:` is absent. A static rule has at < 0. apply_what_if applies static rules only; the
  /// workload runner applies timed ones to the ops that run during them
  /// (planner/workload/link_events.hpp).
  double at = -1;
  double duration = std::numeric_limits<double>::infinity();
  double every = 0;     ///< seconds; 0: once
  bool timed() const { return at >= 0; }
  support::SourceLocation where;
  std::string key;
};

/// The `what_if:` section of a scenario.
struct WhatIfSpec {
  std::vector<ComputeRule> compute;
  std::vector<StragglerRule> stragglers;
  std::vector<LinkRule> links;
  bool empty() const { return compute.empty() && stragglers.empty() && links.empty(); }
};

/// "at 2.5 s for 500 ms, every 1 s": the timing of a timed rule.
std::string describe_timing(const LinkRule& r);

/// Whether timed link event(s) with timings `a` and `b` (LinkRule::at, duration, every) both
/// hold at some instant of [0, horizon) seconds; the first such instant in `when`.
bool windows_overlap(const LinkRule& a, const LinkRule& b, double horizon, double& when);

/// `w` with only its static rules, plus the timed link rules of indices `timed` (into w.links)
/// made static: the cluster while those events hold.
WhatIfSpec with_timed_rules(const WhatIfSpec& w, const std::vector<std::size_t>& timed);

/// Applies `w` to `c`, static rules in order (timed link rules are skipped; compute rules and stragglers multiply speeds, link
/// factors multiply bandwidths): fills c.gpu_speed (one entry per GPU when any rule applies),
/// scales link bandwidths with Topology::set_bandwidth (which splits the touched nodes' classes)
/// and takes failed links down with Topology::fail_link (routes and NCCL's ring search go
/// around them: a failed NVLink of a mesh leaves the rings the others). A failed NIC — a
/// `device:` pattern that selects only NICs, or a NIC whose network port is down — moves each
/// GPU that used it onto the node's NIC with the highest path bandwidth from it (then the lowest
/// latency, then the lowest index) as NCCL's IB port failover does: the GPU's traffic then
/// crosses the node's PCIe or CPU links to reach it, so a NIC behind the host bridge carries it
/// at that path's bandwidth. Appends one line per rule to c.perturbations. Throws
/// support::InputError at the rule's location when a selector matches nothing (naming what it
/// was tried on), when every NIC of a node has failed (its GPUs would have no network), or when
/// the failures leave a GPU of a touched node without a path to the next GPU of its node or to
/// a GPU of another node (at the last failure rule, naming the pair).
void apply_what_if(Cluster& c, const WhatIfSpec& w);

}  // namespace ccsim::models
