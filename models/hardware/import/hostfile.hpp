#pragma once
// Host lists of the field, turned into node counts: MPI / DeepSpeed hostfiles and Slurm
// nodelists.
//   OpenMPI, DeepSpeed:  `host slots=8 [max_slots=8]`      (# comments, blank lines)
//   MPICH, Intel MPI:    `host:8`
//   PBS_NODEFILE, plain: `host` once per slot (repeats add slots) or once per node
//   Slurm nodelist:      `gpu[001-016,020],login-a[1-2]`  (SLURM_JOB_NODELIST, scontrol show hostnames)
#include <string>
#include <vector>

#include "support/input_error.hpp"

namespace ccsim::models::import {

/// Hosts in first-seen order with their slot counts (0: not stated).
struct HostList {
  std::vector<std::string> hosts;
  std::vector<int> slots;
};

/// Reads a hostfile (formats above). Throws support::InputError (file:line:column) for a line
/// that is none of them, a slot count outside [1, 4096], or more than 1,048,576 hosts.
HostList parse_hostfile(const std::string& text, const std::string& file);
HostList read_hostfile(const std::string& path);

/// Expands a Slurm nodelist ("gpu[001-004,007],login1"): ranges keep their zero padding.
/// Throws support::InputError at `where` (column of the fault added) for unbalanced brackets,
/// a range whose end is below its start, nested brackets, or more than 1,048,576 hosts.
std::vector<std::string> expand_nodelist(const std::string& text, const support::SourceLocation& where);

}  // namespace ccsim::models::import
