#pragma once
// Chakra execution traces (MLCommons Chakra, the workload format of ASTRA-sim 2.x) read into a
// Program and a Program written as Chakra traces. Schema: chakra_et.proto (the fields of
// mlcommons/chakra schema/protobuf/et_def.proto that are used here, same numbers). A trace is a
// directory of one file per rank, PREFIX.R.et for R = 0 .. N−1 (ASTRA-sim's naming), and
// optionally comm_group.json, ASTRA-sim's communicator groups: {"ID": [ranks...], ...}, which
// a collective names by its `pg_name` attribute (a collective without one runs over every rank).
//
// What a node becomes (attributes as Chakra's feeder et_feeder_node.cpp and ASTRA-sim's
// Workload.cc read them):
//   COMP_NODE       a compute op: `duration_micros` (µs, ASTRA-sim's replay runtime) fixes its
//                   time (ProgramOp::fixed_time); without one, `num_ops` (int64, FLOPs) and
//                   `tensor_size` (uint64, bytes) are timed by ccsim's compute model (a GEMM of
//                   that many FLOPs reading that many bytes, no shape); without either it takes
//                   no time. `is_cpu_op` nodes are timed the same way, on the same stream.
//   MEM_LOAD_NODE,  `tensor_size` bytes of HBM traffic (ccsim has no model of ASTRA-sim's remote
//   MEM_STORE_NODE  memory pool; the bytes are timed at the GPU's memory bandwidth).
//   COMM_COLL_NODE  `comm_type` (int64 CollectiveCommType) of `comm_size` (int64 bytes, the
//                   nccl-tests size) over the `pg_name` group or every rank; `involved_dim`
//                   (bool list) must select every dimension (ccsim's fabric has no ASTRA-sim
//                   dimensions to select). ALL_REDUCE, REDUCE, ALL_GATHER, BROADCAST,
//                   ALL_TO_ALL, REDUCE_SCATTER(_BLOCK) are read; GATHER, SCATTER, BARRIER refused.
//   COMM_SEND_NODE  `comm_dst`, `comm_tag` (int32), `comm_size`; matched with the COMM_RECV_NODE
//   COMM_RECV_NODE  of the destination with the same source, tag and position.
//   METADATA_NODE,  no work (kept, at zero time, so that dependencies through them hold).
//   INVALID_NODE
// Every other type (STORAGE, BATCH, CHECKPOINT, unknown numbers) is refused.
//
// Program shape: one ProgramRank per trace rank (stage = rank); a rank's ops in a topological
// order of its nodes (ties in file order); compute and memory ops on Stream::Compute,
// collectives on Stream::DpComm (dim DP), sends and receives on Stream::PpComm (dim PP) unless the
// node carries ccsim's own `ccsim_stream` attribute. data_deps and ctrl_deps both become deps. The k-th
// collective of a group on each of its ranks is one collective: each copy depends on what every
// copy waits for (the copies' dependencies and stream predecessors, ops of other ranks), so all
// start together; a collective of g ranks adds g² edges. A send is one-way (ccsim's NCCL p2p,
// ASTRA-sim's send): it starts when its own rank is ready and carries the transfer time; its
// receive depends on it and takes no time, so it ends when the data has arrived.

#include <string>
#include <utility>
#include <vector>

#include "models/workload/program.hpp"

namespace ccsim::models::chakra {

/// The Chakra schema version written in GlobalMetadata (what ASTRA-sim's shipped microbenchmarks carry).
inline constexpr const char* kChakraVersion = "0.0.4";

/// One rank's trace file parsed, before ranks are joined.
struct ChakraNodeView {
  std::uint64_t id = 0;
  int type = 0;  ///< ChakraProtoMsg::NodeType
  std::string name;
};

/// A directory of per-rank traces read into a Program.
struct ChakraTrace {
  std::string prefix;               ///< PREFIX of PREFIX.R.et
  std::vector<std::string> files;   ///< per rank, the file read
  std::string version;              ///< GlobalMetadata.version of rank 0
  bool comm_groups = false;         ///< whether comm_group.json was read
  Program program;
};

/// A file of a trace directory named PREFIX.R.et (R: 1 to 6 decimal digits, ASTRA-sim's naming;
/// the name is split at its last two dots, so PREFIX may hold dots).
struct ChakraRankFile {
  std::string prefix;
  int rank = 0;       ///< R as a number ("007" is rank 7)
  std::string name;   ///< the file name, without the directory
  std::string path;   ///< dir/name
};

/// The entries of `dir` named PREFIX.R.et, whatever they are (regular files, links, FIFOs), in
/// name order. Empty when `dir` cannot be listed. Opens none of them.
std::vector<ChakraRankFile> chakra_rank_files(const std::string& dir);

/// Reads every PREFIX.R.et of `dir` (one prefix, ranks 0 .. N−1 without gaps) and its
/// comm_group.json. Throws support::InputError (file, the node's index and id, the field,
/// expected, found) on: a path that is not a directory (saying what it is), a directory without
/// traces or with several prefixes, two files of one rank (PREFIX.0.et and PREFIX.00.et), a
/// missing rank (ranks run from 0 to the highest one found),
/// a truncated or malformed message (a varint cut short, a size beyond the file), a node of
/// an unsupported type, a bad attribute (a collective type ccsim does not model, a negative
/// or missing size, a peer outside 0 .. N−1, a partial involved_dim), a duplicate node id, a
/// dependency on a node the rank does not have, a dependency cycle, collectives of one group
/// that differ between its ranks, a send without its receive, a pg_name without a group.
ChakraTrace read_chakra_dir(const std::string& dir);

/// Parses one rank's file contents (`file` names it in errors): its nodes in file order, after
/// the GlobalMetadata. Throws support::InputError as read_chakra_dir does for one file. (The
/// reader's fuzz target drives this.)
std::vector<ChakraNodeView> parse_chakra_file(const std::string& bytes, const std::string& file);

/// The files of `program` as Chakra traces, (file name, contents) pairs: PREFIX.R.et per
/// ProgramRank R, and comm_group.json when a collective runs over fewer than every rank.
/// `program` must be a per-rank Program (every communication op with an explicit `group`, as
/// read_chakra_dir returns and planner::world_program makes); a dependency on another rank's op
/// is left out (the reader restores the collectives' and receives' synchronisation). Each node
/// carries what ASTRA-sim reads (is_cpu_op = false; num_ops, tensor_size, duration_micros for
/// compute; comm_type, comm_size, pg_name for collectives; comm_src, comm_dst, comm_tag,
/// comm_size for sends and receives) and ccsim's own attributes so that it reads back to the
/// same Program: ccsim_kind, ccsim_stream and ccsim_duration_s (the exact seconds; ASTRA-sim
/// takes whole µs). A rank's stream predecessor is written as a data dependency (ASTRA-sim has
/// no streams). Throws std::invalid_argument when a communication op has no group.
std::vector<std::pair<std::string, std::string>> chakra_files(const Program& program, const std::string& prefix);

}  // namespace ccsim::models::chakra
