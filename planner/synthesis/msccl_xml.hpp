#pragma once
// MSCCL's XML algorithm format (the schedules msccl-tools, TACCL and TE-CCL emit and MSCCL's and
// RCCL's interpreters run: src/misc/msccl/msccl_parser.cc), to and from ccsim's Schedule.
//
// The file: <algo name proto nchannels nchunksperloop ngpus coll inplace outofplace minBytes
// maxBytes>, one <gpu id i_chunks o_chunks s_chunks> per rank, in it <tb id send recv chan>
// thread blocks (ids 0, 1, ... contiguous per GPU), in each <step s type srcbuf srcoff dstbuf
// dstoff cnt depid deps hasdep> steps run in order. Offsets and counts are in chunks: the
// buffers of one loop cut into nchunksperloop equal chunks (AllGather: the output; ReduceScatter:
// the input; AllReduce, Broadcast, Reduce, AlltoAll: either). A step waits for the step before
// it in its thread block and for step `deps` of thread block `depid` (one dependency per step;
// more are chained through nop steps before it). The k-th send of a thread block to peer p on
// channel c meets the k-th receive of p's thread block from this rank on channel c.
//
// Step types and the Schedule ops they are: s Send; r Recv; rrc RecvReduce (dst = src + the
// data received); cpy Copy; re Reduce (dst = dst + src); rcs Recv then Send of what arrived;
// rrcs RecvReduce then Send of the result; rrs RecvReduce into scratch then Send; nop a join.
// Export writes s, r, rrc, cpy, re and nop, and the attribute ccsim_steps="0" on a step that
// streams behind the previous chunk (Op::steps = 0; MSCCL's parser ignores attributes it does
// not read). Limits (MSCCL and RCCL): a count of at most 71 chunks (MSCCL_MAX_COUNT 72), at
// most 256 steps in a thread block (MSCCL_MAX_NUM_STEPS), at most 1024 steps per rank.

#include <cstdint>
#include <string>

#include "models/collective/schedule.hpp"
#include "support/input_error.hpp"

namespace ccsim::planner::synthesis {

/// What an MSCCL file says about itself.
struct MscclHeader {
  std::string name;
  std::string protocol = "Simple";
  models::Collective collective = models::Collective::AllGather;
  int ranks = 0;
  int channels = 1;
  std::int64_t chunks_per_loop = 0;
  std::uint64_t min_bytes = 0;
  std::uint64_t max_bytes = 0;
  bool in_place = false;
  bool out_of_place = true;
  support::SourceLocation where;  ///< the <algo> element: file, line, column
};

inline constexpr int kMscclMaxCount = 71;            ///< chunks one step may move (MSCCL_MAX_COUNT − 1)
inline constexpr int kMscclMaxStepsPerBlock = 256;   ///< MSCCL_MAX_NUM_STEPS
inline constexpr int kMscclMaxStepsPerRank = 1024;

/// The chunk size of `s` in bytes: the largest size dividing every slice's offset and size and
/// the buffers (nccl-tests' input and output sizes, the scratch).
std::uint64_t msccl_chunk_bytes(const models::Schedule& s);

/// `s` (Step granularity) as MSCCL XML, valid for sizes from `min_bytes` to `max_bytes`.
/// Throws support::InputError (key "schedule") when it cannot be written within MSCCL's limits
/// (a count above kMscclMaxCount, too many steps in a thread block or on a rank: fewer pipeline
/// chunks make fewer steps), std::invalid_argument for a Phase schedule or in-switch ops.
std::string to_msccl_xml(const models::Schedule& s, const std::string& name, std::uint64_t min_bytes, std::uint64_t max_bytes);

/// Reads MSCCL XML text. Throws support::InputError naming `file`, line and column, the element
/// or attribute, what was expected and what was found: XML that does not parse, a missing or
/// malformed attribute, a collective ccsim does not model, ids out of range, a thread block
/// listed twice or with a peer equal to its own GPU, offsets outside the buffers, a dependency on
/// a step that does not exist or a cycle of dependencies.
MscclHeader read_msccl_header(const std::string& text, const std::string& file);

/// The Schedule of the MSCCL XML `text` at nccl-tests size `bytes` (a whole number of chunks,
/// each a whole number of `element_size` elements). Throws what read_msccl_header throws, and
/// support::InputError (key "size") for a size the file does not divide.
models::Schedule from_msccl_xml(const std::string& text, const std::string& file, std::uint64_t bytes, std::uint32_t element_size);

}  // namespace ccsim::planner::synthesis
