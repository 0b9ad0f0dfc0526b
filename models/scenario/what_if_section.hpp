#pragma once
// The `what_if:` section of a scenario: perturbations of the cluster (slow GPUs, stragglers,
// degraded links, failed NICs), read into models::WhatIfSpec and applied to the built cluster
// by models::apply_what_if (models/hardware/perturbation.hpp). docs/scenario-format.md gives
// the schema; every key is settable with `--set what_if....` and sweepable.

#include "models/hardware/perturbation.hpp"
#include "support/yaml_fields.hpp"

namespace ccsim::models {

/// Reads the `what_if` section `f`:
///   compute:    list of {gpus | nodes | group, speed | slowdown, ops}
///   stragglers: one map or a list of {count, speed | slowdown, seed, ops}
///   links:      list of {link: "A -> B" | "A <-> B", device, kind, factor | fail}
/// speed is a fraction of nominal (> 0, finite), slowdown its inverse (≥ 1 makes a GPU slower);
/// ops a list of gemm, attention, memory (default all); factor > 0 multiplies link bandwidth;
/// `fail: true` takes the selected links down (a `device:` that selects only NICs fails those
/// NICs, whose GPUs fail over to another NIC). Throws InputError (file:line:column, key, expected,
/// found) on an unknown key, a missing or doubled selector, speed and slowdown together, a
/// value out of range, a `link:` that is not two patterns joined by -> or <->, and an empty list.
/// Selectors are resolved against the cluster's devices by apply_what_if.
WhatIfSpec parse_what_if(const support::Fields& f);

}  // namespace ccsim::models
