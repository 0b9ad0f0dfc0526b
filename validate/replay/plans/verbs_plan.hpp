#pragma once
// The device-independent half of the `verbs` replay backend (verbs_backend.cpp): which RDMA
// device each rank opens, which queue pairs it creates, where its buffers lie in its one
// registered memory region, where each Send writes in the receiver's region, how deep its
// queues are, and the wire format of the connection information ranks exchange over MPI.
// Everything here is pure computation on the Schedule and the host's device list, so it is
// unit-tested on machines without an RDMA device (tests/validate/replay/plans/verbs_plan_test.cpp).
//
// The transfer protocol these plans serve (a rendezvous, as NCCL's net transport's credits):
//   1. the receiver's Recv / RecvReduce starts (its dependencies are done: its target may be
//      overwritten) and it posts a zero-byte SEND_WITH_IMM "ready" carrying the message's
//      sequence number on the connection;
//   2. the sender's Send, once started and ready, posts an RDMA_WRITE_WITH_IMM of its source
//      slice to the target: the receiver's dst slice (Recv) or the message's own staging slot
//      (RecvReduce), at the address this plan computes from the receiver's layout and the
//      region base address the receiver announced;
//   3. the receiver's receive completion (imm = sequence) says the data landed; a RecvReduce
//      then adds staging into dst. The sender's send completion says the data was delivered.

#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "models/collective/schedule.hpp"
#include "validate/replay/data.hpp"
#include "validate/replay/replay.hpp"

namespace ccsim::validate::replay {

// ---- Devices --------------------------------------------------------------------------------

/// The RDMA device rank `rank` of `nranks` opens: rail = options.rail_of_rank[rank] (rail 0
/// when the list is empty); device = options.nics[rail] when --nics was given (a single name:
/// that device for every rail), else the rail-th of `host_devices` in name order. Several ranks
/// may share a device.
/// Throws ReplayError when: the host has no RDMA device; rail_of_rank is neither empty nor one
/// rail per rank; a rail is negative; the rail has no device (--nics lists fewer devices than
/// the rails used, or the host has fewer devices than rails); a --nics name is not one of
/// `host_devices`.
std::string rank_nic(int rank, int nranks, const BackendOptions& options, std::vector<std::string> host_devices);

/// One entry of a port's GID table (ibv_query_gid_ex): its index, RoCE version and address.
struct GidEntry {
  enum class Type : std::uint8_t { InfiniBand, RoceV1, RoceV2 };
  int index = 0;
  Type type = Type::InfiniBand;
  std::array<std::uint8_t, 16> gid{};
};

/// The GID index to address a RoCE port by: the first RoCE v2 entry holding an IPv4-mapped
/// address (::ffff:a.b.c.d, routable between hosts of one IPv4 subnet, what NCCL picks by
/// default: NCCL_IB_ADDR_FAMILY=AF_INET), else the first RoCE v2 entry, else the first non-zero
/// entry. Throws ReplayError when the table has no non-zero entry (a RoCE port without an IP
/// address: `ip addr` on its netdev).
int choose_gid_index(std::span<const GidEntry> table);

// ---- Queue pairs ----------------------------------------------------------------------------

/// One reliable-connected queue pair of a rank: the messages it exchanges with `peer` on
/// `channel`, both directions (one QP per (peer, channel), so channels progress independently,
/// as NCCL's one connection per channel).
struct RdmaConnection {
  std::int32_t peer = 0;
  std::uint16_t channel = 0;
  /// This rank's Send ops to peer on the channel, in op order: send_ops[k] carries the
  /// message with sequence k (models/collective/schedule.hpp's FIFO matching).
  std::vector<std::uint32_t> send_ops;
  /// This rank's Recv / RecvReduce ops from peer on the channel, in op order (sequence k).
  std::vector<std::uint32_t> recv_ops;
  /// Work requests on the queue pair per replay of the schedule, each direction: this rank
  /// posts one ready per receive and one write per send; the peer the same.
  std::uint32_t messages() const { return static_cast<std::uint32_t>(send_ops.size() + recv_ops.size()); }
};

/// The queue pairs of `rank`: one per (peer, channel) the rank sends to or receives from,
/// sorted by (peer, channel). For a schedule whose sends and receives pair up, rank a has a
/// connection (b, c) exactly when b has (a, c), with a's send_ops as many as b's recv_ops.
/// Throws ReplayError on a switch op (the backend has no in-switch reduction) or a message
/// to itself / to a rank outside the schedule.
std::vector<RdmaConnection> rank_connections(const models::Schedule& s, int rank);

/// Index of the connection to (peer, channel) in `connections` (sorted as rank_connections
/// returns them), or -1.
int find_connection(std::span<const RdmaConnection> connections, int peer, int channel);

// ---- Memory ---------------------------------------------------------------------------------

/// Alignment of each buffer in a rank's region, bytes: a 4 KiB page, so each buffer starts on
/// its own page as separately allocated buffers would.
inline constexpr std::uint64_t kRegionAlign = 4096;
/// Alignment of each staging slot, bytes: a 64-byte cache line (x86-64, Neoverse), so that the
/// RDMA write of one message and the host's reduction of another never share a line.
inline constexpr std::uint64_t kStagingAlign = 64;
inline constexpr std::uint64_t kNoStaging = std::numeric_limits<std::uint64_t>::max();

/// A rank's registered memory region: its input, output and scratch buffers and the staging
/// area RecvReduce messages land in, one after another, each starting at a multiple of
/// kRegionAlign. Every RecvReduce op has its own staging slot (kStagingAlign-aligned, its
/// message's bytes): slots are never reused within a replay, so no schedule that models::verify
/// accepts can deadlock waiting for a slot, at a cost of at most the bytes the rank receives
/// per replay.
struct RegionLayout {
  std::uint64_t input = 0, output = 0, scratch = 0, staging = 0;  ///< offsets in the region, bytes
  RankBufferBytes buffers;                                       ///< sizes of the three buffers, bytes
  std::uint64_t staging_bytes = 0;
  std::uint64_t bytes = 0;  ///< the whole region, bytes (a multiple of kRegionAlign, at least one page)
  /// Per op of the rank: offset in the region of a RecvReduce's staging slot; kNoStaging for others.
  std::vector<std::uint64_t> staging_of_op;

  /// Offset in the region of the first byte of slice `s`.
  std::uint64_t offset_of(const models::Slice& s) const;
};

/// The layout of rank `rank`'s region, given its buffer sizes (rank_buffer_bytes()).
RegionLayout region_layout(const models::Schedule& s, int rank, const RankBufferBytes& buffers);

/// Where each op of `rank` goes on the wire.
struct OpRoute {
  std::int32_t connection = -1;  ///< index in rank_connections(); -1 for local ops
  std::uint32_t sequence = 0;    ///< the message's number on its connection and direction
  /// Send: offset in the receiver's region that the data is written to (the receiver's dst
  /// slice for a Recv, its staging slot for a RecvReduce). 0 for other ops.
  std::uint64_t remote_offset = 0;
};

/// Routes of every op of `rank`. `partners` is match_messages(s); `layouts` holds every rank's
/// region_layout(). Throws ReplayError when a Send's partner is not a Recv / RecvReduce of the
/// same size or the matching disagrees with the connections' FIFO order.
std::vector<OpRoute> op_routes(const models::Schedule& s, int rank, std::span<const RdmaConnection> connections,
                               const std::vector<std::vector<Partner>>& partners, std::span<const RegionLayout> layouts);

/// Queue sizes of a rank's queue pairs and their shared completion queue.
struct QueueDepths {
  std::vector<std::uint32_t> work_requests;  ///< per connection: send queue = receive queue depth
  std::uint32_t completion_entries = 0;      ///< of the rank's one CQ: ≥ Σ 2 × work_requests
};

/// Depths for `connections` on a device allowing `max_qp_wr` work requests per queue and
/// `max_cqe` CQ entries (ibv_device_attr). A connection's depth is its messages() per replay
/// (every post of a replay fits; never an RNR retry) capped at max_qp_wr and lowered, all
/// together, until the CQ (every posted request's completion) fits in max_cqe. A smaller depth
/// stays correct: sends beyond it wait in the backend for completions, receives beyond it
/// are retried by the sender's RNR retries. Throws ReplayError when not even depth 1 per
/// connection fits (more queue pairs than max_cqe / 2).
QueueDepths queue_depths(std::span<const RdmaConnection> connections, std::uint32_t max_qp_wr, std::uint32_t max_cqe);

// ---- Wire format ----------------------------------------------------------------------------

/// A rank's half of one queue pair, as its peer needs it to connect (ibv_modify_qp to RTR).
struct QpEndpoint {
  std::int32_t peer = 0;
  std::uint16_t channel = 0;
  std::uint32_t qp_num = 0;  ///< 24 bits
  std::uint32_t psn = 0;     ///< first packet sequence number, 24 bits
};

/// What a rank announces to every other rank (MPI_Allgatherv) before connecting.
struct RankEndpoint {
  std::int32_t rank = 0;
  std::uint16_t lid = 0;                  ///< port LID (InfiniBand); 0 on RoCE
  std::array<std::uint8_t, 16> gid{};     ///< port GID at the chosen index (RoCE)
  std::uint8_t mtu = 0;                   ///< enum ibv_mtu of the port's active MTU (1 = 256 B … 5 = 4096 B)
  std::uint8_t ethernet = 0;              ///< 1 when the link layer is Ethernet (RoCE: address by GID)
  std::uint64_t region_address = 0;       ///< virtual address of the region's first byte
  std::uint32_t rkey = 0;                 ///< remote key of the region
  std::uint64_t region_bytes = 0;         ///< RegionLayout::bytes, checked by peers against their own computation
  std::vector<QpEndpoint> qps;
};

/// Size of the encoded header and of each queue pair entry, bytes.
inline constexpr std::size_t kEndpointHeaderBytes = 54;
inline constexpr std::size_t kQpEndpointBytes = 14;

/// Encodes `e`: "CCVB", version 1 (u16), rank (i32), lid (u16), gid (16 B), mtu (u8),
/// ethernet (u8), region address (u64), rkey (u32), region bytes (u64), queue pair count
/// (u32), then per queue pair peer (i32), channel (u16), qp_num (u32), psn (u32); integers
/// little-endian, independent of the host's byte order.
std::vector<std::uint8_t> serialize(const RankEndpoint& e);

/// Decodes serialize()'s output. Throws ReplayError naming `from` (e.g. "rank 3") when the
/// magic or version differ or the length is not the header plus the announced queue pairs.
RankEndpoint parse_endpoint(std::span<const std::uint8_t> bytes, const std::string& from);

}  // namespace ccsim::validate::replay
