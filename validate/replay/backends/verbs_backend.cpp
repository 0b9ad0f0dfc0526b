// The `verbs` replay backend: ranks are processes started by mpirun, one per rank, each with
// reliable-connected RDMA queue pairs to the peers its program exchanges messages with (one per
// peer and channel) on the RDMA device of its rail. Data moves only by RDMA writes; MPI is used
// out of band, to exchange queue pair numbers, addresses and keys, and for the barriers around
// iterations and the gathering of results at rank 0. The plans (devices, queue pairs, memory
// layout, routes, depths, wire format) are in verbs_plan.hpp and the transfer protocol (a
// rendezvous: the receiver's "ready", then the sender's RDMA_WRITE_WITH_IMM) in
// verbs_transport.hpp, both tested without a device; this file holds the ibverbs and MPI calls
// (IbvPort, VerbsBackend), run end to end by tests/cli/replay_verbs.sh, on a real device or with
// the libibverbs test double tests/fake_verbs/fake_ibverbs.cpp.
//
// Built when CMake finds libibverbs and MPI (CCSIM_HAVE_VERBS). Without an RDMA NIC, soft-RoCE
// (Linux's rdma_rxe) will do: rdma link add rxe0 type rxe netdev eth0.

#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>

// The C API only: OpenMPI's and MPICH's mpi.h pull in the deprecated C++ bindings otherwise.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include "support/mpi/launcher.hpp"
#include "support/mpi/session.hpp"
#include "validate/replay/backends/backends.hpp"
#include "validate/replay/data.hpp"
#include "validate/replay/rank_loop.hpp"
#include "validate/replay/plans/verbs_plan.hpp"
#include "validate/replay/plans/verbs_transport.hpp"

namespace ccsim::validate::replay {

namespace {

constexpr std::uint8_t kPort = 1;  ///< the device port ranks use (every NIC and rxe device has port 1)

[[noreturn]] void fail(const std::string& what, int err) {
  throw ReplayError("verbs: " + what + " failed: " + std::strerror(err) + (err == ENOMEM || err == EPERM ?
                    " (pinned memory is limited by `ulimit -l`: raise it, e.g. to unlimited)" : ""));
}

void mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw ReplayError(std::string("verbs: MPI ") + what + " failed: " + std::string(text, static_cast<std::size_t>(length)));
}

template <class T, auto Free>
struct Deleter {
  void operator()(T* p) const { if (p) Free(p); }
};
using Context = std::unique_ptr<ibv_context, Deleter<ibv_context, ibv_close_device>>;
using Pd = std::unique_ptr<ibv_pd, Deleter<ibv_pd, ibv_dealloc_pd>>;
using Cq = std::unique_ptr<ibv_cq, Deleter<ibv_cq, ibv_destroy_cq>>;
using Qp = std::unique_ptr<ibv_qp, Deleter<ibv_qp, ibv_destroy_qp>>;
using Mr = std::unique_ptr<ibv_mr, Deleter<ibv_mr, ibv_dereg_mr>>;
using Region = std::unique_ptr<std::byte, Deleter<void, std::free>>;

/// One replay's queue pairs and memory on one rank (built per Schedule; destroyed in reverse).
struct Wiring {
  std::vector<RdmaConnection> connections;
  std::vector<OpRoute> routes;
  RegionLayout layout;
  QueueDepths depths;
  std::vector<std::uint32_t> psn;           ///< per connection
  std::vector<std::uint64_t> remote_base;   ///< per connection: the peer's region address
  std::vector<std::uint32_t> remote_rkey;   ///< per connection
  Region region;
  Mr mr;
  Cq cq;
  std::vector<Qp> qps;
  std::byte* base() const { return region.get(); }
};

/// Work request ids: what the request is (8 bits), its connection (24 bits), its op (32 bits).
enum WrTag : std::uint64_t { kReceiveWqe = 1, kWrite = 2, kReady = 3 };
std::uint64_t wr_id(WrTag tag, std::uint32_t connection, std::uint32_t op = 0) {
  return (std::uint64_t{tag} << 56) | (std::uint64_t{connection & 0xffffffu} << 32) | op;
}

void post_receive(ibv_qp* qp, std::uint32_t connection) {
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  wr.wr_id = wr_id(kReceiveWqe, connection);
  wr.num_sge = 0;  // readies carry no payload; writes with immediate land at their remote address
  if (const int rc = ibv_post_recv(qp, &wr, &bad)) fail("ibv_post_recv", rc);
}

/// The RdmaPort of one rank on its ibverbs queue pairs and completion queue.
class IbvPort final : public RdmaPort {
 public:
  IbvPort(int rank, Wiring& w) : rank_(rank), w_(w) {}

  void write(std::uint32_t q, std::uint32_t op, const std::byte* src, std::uint64_t bytes, std::uint64_t remote_offset,
             std::uint32_t sequence) override {
    ibv_sge sge{};
    sge.addr = reinterpret_cast<std::uintptr_t>(src);
    sge.length = static_cast<std::uint32_t>(bytes);  // plan() checked bytes <= max_msg_sz
    sge.lkey = w_.mr->lkey;
    ibv_send_wr wr{};
    wr.wr_id = wr_id(kWrite, q, op);
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(sequence);
    wr.sg_list = &sge;
    wr.num_sge = bytes > 0 ? 1 : 0;
    wr.wr.rdma.remote_addr = w_.remote_base[q] + remote_offset;
    wr.wr.rdma.rkey = w_.remote_rkey[q];
    post(q, wr);
  }

  void ready(std::uint32_t q, std::uint32_t op, std::uint32_t sequence) override {
    ibv_send_wr wr{};
    wr.wr_id = wr_id(kReady, q, op);
    wr.opcode = IBV_WR_SEND_WITH_IMM;  // zero bytes: the immediate (sequence) is the message
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(sequence);
    wr.num_sge = 0;
    post(q, wr);
  }

  std::size_t poll(std::span<RdmaCompletion> out) override {
    ibv_wc wc[32];
    const int n = ibv_poll_cq(w_.cq.get(), static_cast<int>(std::min<std::size_t>(out.size(), 32)), wc);
    if (n < 0) throw ReplayError("verbs: rank " + std::to_string(rank_) + ": ibv_poll_cq failed");
    for (int i = 0; i < n; ++i) {
      const auto tag = static_cast<WrTag>(wc[i].wr_id >> 56);
      const auto q = static_cast<std::uint32_t>((wc[i].wr_id >> 32) & 0xffffffu);
      const auto op = static_cast<std::uint32_t>(wc[i].wr_id & 0xffffffffu);
      if (wc[i].status != IBV_WC_SUCCESS) {
        const char* what = tag == kReceiveWqe ? "a receive" : tag == kWrite ? "an RDMA write" : "a ready message";
        throw ReplayError("verbs: rank " + std::to_string(rank_) + ": " + what + " on the queue pair to rank " +
                          std::to_string(w_.connections[q].peer) + " channel " + std::to_string(w_.connections[q].channel) +
                          " completed with " + ibv_wc_status_str(wc[i].status) + " (vendor error " + std::to_string(wc[i].vendor_err) + ")");
      }
      RdmaCompletion& c = out[static_cast<std::size_t>(i)];
      c.connection = q;
      c.op = op;
      c.sequence = 0;
      if (tag == kWrite) {
        c.kind = RdmaCompletion::Kind::WriteDone;
      } else if (tag == kReady) {
        c.kind = RdmaCompletion::Kind::ReadyDone;
      } else {
        post_receive(w_.qps[q].get(), q);  // keep the receive queue full
        c.sequence = ntohl(wc[i].imm_data);
        if (wc[i].opcode == IBV_WC_RECV) {
          c.kind = RdmaCompletion::Kind::Ready;
        } else if (wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
          c.kind = RdmaCompletion::Kind::Data;
        } else {
          throw ReplayError("verbs: rank " + std::to_string(rank_) + ": unexpected receive completion opcode " + std::to_string(wc[i].opcode));
        }
      }
    }
    return static_cast<std::size_t>(n);
  }

 private:
  void post(std::uint32_t q, ibv_send_wr& wr) {
    ibv_send_wr* bad = nullptr;
    if (const int rc = ibv_post_send(w_.qps[q].get(), &wr, &bad)) fail("ibv_post_send to rank " + std::to_string(w_.connections[q].peer), rc);
  }

  int rank_;
  Wiring& w_;
};

class VerbsBackend final : public Backend {
 public:
  explicit VerbsBackend(const BackendOptions& options) {
    // MPI for the whole process (support/mpi/session.hpp): started by the first verbs backend
    // unless something else did, finalised at exit, not by a backend's destructor (the CLI
    // replaces its first backend, made to learn the world size, by one that knows the rails).
    support::mpi::Session& session = support::mpi::Session::process();
    if (!session.initialised()) {
      if (!support::mpi::launched()) {
        throw ReplayError("verbs: the verbs backend runs one process per rank under an MPI launcher: mpirun -n <ranks> ccsim replay --backend verbs ...");
      }
      try {
        session.start(support::mpi::ThreadLevel::Funneled);
      } catch (const support::mpi::StartError& e) {
        mpi(e.code(), "MPI_Init_thread");  // throws for MPI's error code
        throw ReplayError(std::string("verbs: ") + e.what());
      }
    }
    mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    collectively([&] { open_device(options); });
    // Host and device of every rank, for describe().
    char mine[256] = {};
    int length = 0;
    MPI_Get_processor_name(mine, &length);
    std::vector<char> all(256 * static_cast<std::size_t>(size_));
    mpi(MPI_Allgather(mine, 256, MPI_CHAR, all.data(), 256, MPI_CHAR, MPI_COMM_WORLD), "MPI_Allgather");
    for (int r = 0; r < size_; ++r) hosts_.insert(std::string(all.data() + 256 * r, strnlen(all.data() + 256 * r, 255)));
    std::strncpy(mine, device_.c_str(), 255);
    mpi(MPI_Allgather(mine, 256, MPI_CHAR, all.data(), 256, MPI_CHAR, MPI_COMM_WORLD), "MPI_Allgather");
    for (int r = 0; r < size_; ++r) devices_.insert(std::string(all.data() + 256 * r, strnlen(all.data() + 256 * r, 255)));
  }

  std::string_view name() const override { return "verbs"; }
  int world_ranks() const override { return size_; }
  bool reporter() const override { return rank_ == 0; }

  std::string describe(int nranks) const override {
    std::string devices;
    for (const auto& d : devices_) devices += (devices.empty() ? "" : ",") + d;
    return std::to_string(nranks) + " MPI processes on " + std::to_string(hosts_.size()) + (hosts_.size() == 1 ? " host" : " hosts") +
           ", RDMA writes over " + devices + (ethernet_ ? " (RoCE)" : " (InfiniBand)");
  }

  SizeResult run(const models::Schedule& s, const ReplayConfig& config) override {
    if (support::mpi::Session::process().failed()) throw ReplayError("verbs: an earlier replay failed part-way; the ranks are out of step: restart the job");
    if (s.nranks != size_) {
      throw ReplayError("verbs: the schedule has " + std::to_string(s.nranks) + " ranks but mpirun started " + std::to_string(size_) +
                        " processes: expected mpirun -n " + std::to_string(s.nranks));
    }
    for (int r = 0; r < s.nranks; ++r) rank_connections(s, r);  // every rank refuses switch ops, not only those that hold one
    check_replayable(s, config.type);

    Wiring w;
    collectively([&] { plan(s, w); });
    std::vector<RankEndpoint> peers;
    collectively([&] { peers = exchange(w); });
    collectively([&] { connect(w, peers); });
    mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    try {
      return replay(s, config, w);
    } catch (...) {
      // The other ranks wait in a barrier forever: MPI_Finalize would wait for them; the process
      // exits without it and mpirun ends the job.
      support::mpi::Session::process().leave_unfinalised();
      throw;
    }
  }

 private:
  /// Runs `f` on every rank; when it throws on any, throws on every rank (the first failing
  /// rank's message), so that no rank waits in a collective the others never reach.
  template <class F>
  void collectively(F&& f) {
    std::string error;
    try {
      f();
    } catch (const std::exception& e) {
      error = e.what();
    }
    const int mine = error.empty() ? size_ : rank_;
    int first = size_;
    mpi(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
    if (first == size_) return;
    int length = static_cast<int>(error.size());
    mpi(MPI_Bcast(&length, 1, MPI_INT, first, MPI_COMM_WORLD), "MPI_Bcast");
    error.resize(static_cast<std::size_t>(length));
    mpi(MPI_Bcast(error.data(), length, MPI_CHAR, first, MPI_COMM_WORLD), "MPI_Bcast");
    throw ReplayError(rank_ == first ? error : "verbs: rank " + std::to_string(first) + " failed: " + error);
  }

  void open_device(const BackendOptions& options) {
    int count = 0;
    std::unique_ptr<ibv_device*, Deleter<ibv_device*, ibv_free_device_list>> list(ibv_get_device_list(&count));
    if (!list) {
      // ENOSYS: the kernel has no RDMA subsystem (/sys/class/infiniband absent).
      throw ReplayError(std::string("verbs: this host has no RDMA device (ibv_get_device_list: ") + std::strerror(errno) +
                        "); load the NIC's driver, or for soft-RoCE: modprobe rdma_rxe; rdma link add rxe0 type rxe netdev <interface>");
    }
    std::vector<std::string> names;
    for (int i = 0; i < count; ++i) names.emplace_back(ibv_get_device_name(list.get()[i]));
    device_ = rank_nic(rank_, size_, options, names);
    for (int i = 0; i < count; ++i) {
      if (names[static_cast<std::size_t>(i)] == device_) context_.reset(ibv_open_device(list.get()[i]));
    }
    if (!context_) fail("ibv_open_device(" + device_ + ")", errno);
    if (const int rc = ibv_query_device(context_.get(), &device_attr_)) fail("ibv_query_device(" + device_ + ")", rc);
    if (const int rc = ibv_query_port(context_.get(), kPort, &port_attr_)) fail("ibv_query_port(" + device_ + ")", rc);
    if (port_attr_.state != IBV_PORT_ACTIVE) {
      throw ReplayError("verbs: port 1 of " + device_ + " is " + ibv_port_state_str(port_attr_.state) +
                        ", expected ACTIVE (a cable, a subnet manager, or for rxe the netdev's link)");
    }
    ethernet_ = port_attr_.link_layer == IBV_LINK_LAYER_ETHERNET;
    std::vector<GidEntry> table;
    for (int i = 0; i < port_attr_.gid_tbl_len; ++i) {
      ibv_gid_entry entry{};
      if (ibv_query_gid_ex(context_.get(), kPort, static_cast<std::uint32_t>(i), &entry, 0) != 0) continue;  // an empty slot
      GidEntry g;
      g.index = i;
      g.type = entry.gid_type == IBV_GID_TYPE_ROCE_V2 ? GidEntry::Type::RoceV2
               : entry.gid_type == IBV_GID_TYPE_ROCE_V1 ? GidEntry::Type::RoceV1 : GidEntry::Type::InfiniBand;
      std::memcpy(g.gid.data(), entry.gid.raw, 16);
      table.push_back(g);
    }
    gid_index_ = ethernet_ ? choose_gid_index(table) : 0;
    if (const int rc = ibv_query_gid(context_.get(), kPort, gid_index_, &gid_)) fail("ibv_query_gid(" + device_ + ")", rc);
    pd_.reset(ibv_alloc_pd(context_.get()));
    if (!pd_) fail("ibv_alloc_pd(" + device_ + ")", errno);
  }

  /// Plans this rank's part of `s` and creates its memory region, CQ and queue pairs (INIT,
  /// receives posted).
  void plan(const models::Schedule& s, Wiring& w) {
    const auto partners = match_messages(s);
    std::vector<RegionLayout> layouts;
    for (int r = 0; r < s.nranks; ++r) layouts.push_back(region_layout(s, r, rank_buffer_bytes(s, r)));
    w.connections = rank_connections(s, rank_);
    w.routes = op_routes(s, rank_, w.connections, partners, layouts);
    w.layout = layouts[static_cast<std::size_t>(rank_)];
    for (const auto& o : s.ranks[static_cast<std::size_t>(rank_)].ops) {
      const bool message = o.kind == models::OpKind::Send || o.kind == models::OpKind::Recv || o.kind == models::OpKind::RecvReduce;
      if (message && o.bytes() > port_attr_.max_msg_sz) {
        throw ReplayError("verbs: a message of " + std::to_string(o.bytes()) + " bytes exceeds " + device_ + "'s largest, " +
                          std::to_string(port_attr_.max_msg_sz) + " bytes (max_msg_sz): use more channels or a smaller size");
      }
    }
    w.depths = queue_depths(w.connections, static_cast<std::uint32_t>(device_attr_.max_qp_wr), static_cast<std::uint32_t>(device_attr_.max_cqe));

    void* memory = nullptr;
    if (const int rc = posix_memalign(&memory, kRegionAlign, w.layout.bytes)) fail("allocating " + std::to_string(w.layout.bytes) + " bytes", rc);
    w.region.reset(static_cast<std::byte*>(memory));
    std::memset(memory, 0, w.layout.bytes);
    w.mr.reset(ibv_reg_mr(pd_.get(), memory, w.layout.bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
    if (!w.mr) fail("ibv_reg_mr of " + std::to_string(w.layout.bytes) + " bytes", errno);
    w.cq.reset(ibv_create_cq(context_.get(), static_cast<int>(w.depths.completion_entries), nullptr, nullptr, 0));
    if (!w.cq) fail("ibv_create_cq(" + std::to_string(w.depths.completion_entries) + " entries)", errno);
    for (std::uint32_t q = 0; q < w.connections.size(); ++q) {
      ibv_qp_init_attr init{};
      init.send_cq = init.recv_cq = w.cq.get();
      init.qp_type = IBV_QPT_RC;
      init.cap.max_send_wr = init.cap.max_recv_wr = w.depths.work_requests[q];
      init.cap.max_send_sge = init.cap.max_recv_sge = 1;
      w.qps.emplace_back(ibv_create_qp(pd_.get(), &init));
      if (!w.qps.back()) fail("ibv_create_qp to rank " + std::to_string(w.connections[q].peer), errno);
      ibv_qp_attr a{};
      a.qp_state = IBV_QPS_INIT;
      a.pkey_index = 0;
      a.port_num = kPort;
      a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
      if (const int rc = ibv_modify_qp(w.qps.back().get(), &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
        fail("ibv_modify_qp to INIT", rc);
      }
      for (std::uint32_t i = 0; i < w.depths.work_requests[q]; ++i) post_receive(w.qps.back().get(), q);
      // Any 24-bit start is valid; distinct per rank and queue pair to make stray packets visible.
      w.psn.push_back((static_cast<std::uint32_t>(rank_) * 7919u + q * 104729u + 1u) & 0xffffffu);
    }
  }

  /// Announces this rank's endpoint to every rank and returns every rank's (MPI_Allgatherv).
  std::vector<RankEndpoint> exchange(const Wiring& w) {
    RankEndpoint e;
    e.rank = rank_;
    e.lid = port_attr_.lid;
    std::memcpy(e.gid.data(), gid_.raw, 16);
    e.mtu = static_cast<std::uint8_t>(port_attr_.active_mtu);
    e.ethernet = ethernet_ ? 1 : 0;
    e.region_address = reinterpret_cast<std::uintptr_t>(w.base());
    e.rkey = w.mr->rkey;
    e.region_bytes = w.layout.bytes;
    for (std::size_t q = 0; q < w.connections.size(); ++q) {
      e.qps.push_back({w.connections[q].peer, w.connections[q].channel, w.qps[q]->qp_num, w.psn[q]});
    }
    const auto bytes = serialize(e);
    const int length = static_cast<int>(bytes.size());
    std::vector<int> lengths(static_cast<std::size_t>(size_)), offsets(static_cast<std::size_t>(size_));
    mpi(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD), "MPI_Allgather");
    long long total = 0;
    for (int r = 0; r < size_; ++r) {
      offsets[static_cast<std::size_t>(r)] = static_cast<int>(total);
      total += lengths[static_cast<std::size_t>(r)];
    }
    if (total > INT32_MAX) throw ReplayError("verbs: connection information exceeds MPI's 2 GiB limit");
    std::vector<std::uint8_t> all(static_cast<std::size_t>(total));
    mpi(MPI_Allgatherv(bytes.data(), length, MPI_BYTE, all.data(), lengths.data(), offsets.data(), MPI_BYTE, MPI_COMM_WORLD), "MPI_Allgatherv");
    std::vector<RankEndpoint> out;
    for (int r = 0; r < size_; ++r) {
      out.push_back(parse_endpoint(std::span(all).subspan(static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]),
                                                          static_cast<std::size_t>(lengths[static_cast<std::size_t>(r)])),
                                   "rank " + std::to_string(r)));
    }
    return out;
  }

  /// Moves every queue pair to RTR and RTS towards its peer's half.
  void connect(Wiring& w, const std::vector<RankEndpoint>& peers) {
    for (std::size_t q = 0; q < w.connections.size(); ++q) {
      const auto& c = w.connections[q];
      const RankEndpoint& e = peers[static_cast<std::size_t>(c.peer)];
      const std::string who = "rank " + std::to_string(c.peer);
      if (e.rank != c.peer) throw ReplayError("verbs: the endpoint gathered for " + who + " says rank " + std::to_string(e.rank));
      const auto it = std::find_if(e.qps.begin(), e.qps.end(), [&](const QpEndpoint& p) { return p.peer == rank_ && p.channel == c.channel; });
      if (it == e.qps.end()) {
        throw ReplayError("verbs: " + who + " announced no queue pair to rank " + std::to_string(rank_) + " channel " + std::to_string(c.channel) +
                          ", expected one (the ranks replay different schedules?)");
      }
      if (e.ethernet != (ethernet_ ? 1 : 0)) throw ReplayError("verbs: " + who + " uses another link layer (InfiniBand and RoCE do not connect)");
      w.remote_base.push_back(e.region_address);
      w.remote_rkey.push_back(e.rkey);

      ibv_qp_attr a{};
      a.qp_state = IBV_QPS_RTR;
      a.path_mtu = std::min(port_attr_.active_mtu, static_cast<ibv_mtu>(e.mtu));
      a.dest_qp_num = it->qp_num;
      a.rq_psn = it->psn;
      a.max_dest_rd_atomic = 1;
      a.min_rnr_timer = 12;  // 0.64 ms (IBTA's RNR timer table), the usual value (perftest, NCCL)
      a.ah_attr.port_num = kPort;
      a.ah_attr.dlid = e.lid;
      if (ethernet_) {
        a.ah_attr.is_global = 1;
        std::memcpy(a.ah_attr.grh.dgid.raw, e.gid.data(), 16);
        a.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(gid_index_);
        a.ah_attr.grh.hop_limit = 64;
      }
      if (const int rc = ibv_modify_qp(w.qps[q].get(), &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                                            IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
        fail("ibv_modify_qp to RTR towards " + who, rc);
      }
      a = {};
      a.qp_state = IBV_QPS_RTS;
      a.timeout = 14;    // 4.096 us × 2^14 = 67 ms before a retransmission (NCCL_IB_TIMEOUT's default, 18, is for large fabrics)
      a.retry_cnt = 7;   // the most the field holds
      a.rnr_retry = 7;   // 7 = retry forever: a receive queue shallower than a replay's messages only slows it
      a.sq_psn = w.psn[q];
      a.max_rd_atomic = 1;
      if (const int rc = ibv_modify_qp(w.qps[q].get(), &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                                            IBV_QP_MAX_QP_RD_ATOMIC)) {
        fail("ibv_modify_qp to RTS towards " + who, rc);
      }
    }
  }

  SizeResult replay(const models::Schedule& s, const ReplayConfig& config, Wiring& w) {
    const auto& program = s.ranks[static_cast<std::size_t>(rank_)];
    const std::uint32_t element = size_of(config.type);
    IbvPort port(rank_, w);
    VerbsTransport transport({rank_, config.type, &program, w.connections, w.routes, &w.layout, w.depths.work_requests, w.base()}, port);
    const RankMemory memory = transport.memory();
    RankLoop loop(program, rank_, config.type);
    SizeResult result;
    result.bytes = s.bytes;
    std::vector<MeasuredOp> records;  // this rank's ops of every timed iteration, iteration by iteration
    for (int it = 0; it < config.warmup + config.iters; ++it) {
      const bool timed = it >= config.warmup;
      fill_input(config.type, rank_, memory.input, w.layout.buffers.input / element);
      fill_poison(config.type, memory.output, w.layout.buffers.output / element);
      fill_poison(config.type, memory.scratch, w.layout.buffers.scratch / element);
      transport.reset();
      mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
      const auto t0 = Clock::now();
      loop.run(memory, transport, t0, timed && config.record_ops ? &records : nullptr);
      const double mine = std::chrono::duration<double>(Clock::now() - t0).count();
      transport.drain(std::chrono::seconds(60));
      double slowest = 0;
      mpi(MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD), "MPI_Reduce");
      if (timed && rank_ == 0) result.iteration_times.push_back(slowest);
    }
    check(s, config, memory, w, result);
    if (config.record_ops) gather_records(s, config, records, result);
    return result;
  }

  /// Counts wrong output elements on every rank; rank 0 gets the sum and the first wrong
  /// element of the lowest rank that has one.
  void check(const models::Schedule& s, const ReplayConfig& config, const RankMemory& memory, const Wiring& w, SizeResult& result) {
    std::string first;
    const std::uint64_t wrong = count_wrong(config.type, s.collective, s.root, rank_, s.nranks, memory.output,
                                            w.layout.buffers.output / size_of(config.type), first);
    std::uint64_t total = 0;
    mpi(MPI_Reduce(&wrong, &total, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD), "MPI_Reduce");
    const int mine = wrong > 0 ? rank_ : size_;
    int who = size_;
    mpi(MPI_Allreduce(&mine, &who, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
    if (who < size_ && who != 0) {
      if (rank_ == who) {
        mpi(MPI_Send(first.data(), static_cast<int>(first.size()), MPI_CHAR, 0, 0, MPI_COMM_WORLD), "MPI_Send");
      } else if (rank_ == 0) {
        MPI_Status status;
        int length = 0;
        mpi(MPI_Probe(who, 0, MPI_COMM_WORLD, &status), "MPI_Probe");
        mpi(MPI_Get_count(&status, MPI_CHAR, &length), "MPI_Get_count");
        first.resize(static_cast<std::size_t>(length));
        mpi(MPI_Recv(first.data(), length, MPI_CHAR, who, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
      }
    }
    if (rank_ == 0) {
      result.wrong = total;
      if (who < size_) result.first_wrong = first;  // count_wrong's "rank r element i: ..." of the lowest rank with one
    }
  }

  /// Gathers every rank's op records at rank 0: result.ops[i] holds iteration i's ops, rank by rank.
  void gather_records(const models::Schedule& s, const ReplayConfig& config, const std::vector<MeasuredOp>& records, SizeResult& result) {
    static_assert(std::is_trivially_copyable_v<MeasuredOp>);
    const auto iters = static_cast<std::size_t>(config.iters);
    std::vector<int> counts(static_cast<std::size_t>(size_)), displs(static_cast<std::size_t>(size_));
    long long total = 0;
    for (int r = 0; r < size_; ++r) {
      counts[static_cast<std::size_t>(r)] = static_cast<int>(s.ranks[static_cast<std::size_t>(r)].ops.size() * iters * sizeof(MeasuredOp));
      displs[static_cast<std::size_t>(r)] = static_cast<int>(total);
      total += static_cast<long long>(s.ranks[static_cast<std::size_t>(r)].ops.size() * iters * sizeof(MeasuredOp));
      if (total > INT32_MAX) throw ReplayError("verbs: the op records exceed MPI's 2 GiB limit: replay with fewer iterations or without per-op records");
    }
    if (records.size() * sizeof(MeasuredOp) != static_cast<std::size_t>(counts[static_cast<std::size_t>(rank_)])) {
      throw ReplayError("verbs: rank " + std::to_string(rank_) + " recorded " + std::to_string(records.size()) + " op times, expected " +
                        std::to_string(program_ops(s) * iters));
    }
    std::vector<MeasuredOp> all(rank_ == 0 ? static_cast<std::size_t>(total) / sizeof(MeasuredOp) : 0);
    mpi(MPI_Gatherv(records.data(), counts[static_cast<std::size_t>(rank_)], MPI_BYTE, all.data(), counts.data(), displs.data(), MPI_BYTE, 0,
                    MPI_COMM_WORLD),
        "MPI_Gatherv");
    if (rank_ != 0) return;
    result.ops.assign(iters, {});
    for (int r = 0; r < size_; ++r) {
      const std::size_t ops = s.ranks[static_cast<std::size_t>(r)].ops.size();
      const MeasuredOp* mine = all.data() + static_cast<std::size_t>(displs[static_cast<std::size_t>(r)]) / sizeof(MeasuredOp);
      for (std::size_t i = 0; i < iters; ++i) result.ops[i].insert(result.ops[i].end(), mine + i * ops, mine + (i + 1) * ops);
    }
  }

  std::size_t program_ops(const models::Schedule& s) const { return s.ranks[static_cast<std::size_t>(rank_)].ops.size(); }

  int rank_ = 0, size_ = 1;
  std::string device_;
  bool ethernet_ = false;
  int gid_index_ = 0;
  ibv_gid gid_{};
  ibv_device_attr device_attr_{};
  ibv_port_attr port_attr_{};
  Context context_;
  Pd pd_;
  std::set<std::string> hosts_, devices_;
};

}  // namespace

std::unique_ptr<Backend> make_verbs_backend(const BackendOptions& options) { return std::make_unique<VerbsBackend>(options); }

}  // namespace ccsim::validate::replay
