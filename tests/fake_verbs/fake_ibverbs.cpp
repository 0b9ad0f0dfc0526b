// A stand-in for libibverbs, LD_PRELOADed into `mpirun ... ccsim replay --backend verbs` by
// tests/cli/replay_verbs_fake.sh on hosts without an RDMA device, so that the verbs backend's
// own code — device and port queries, GID choice, memory registration, queue pair creation and
// state changes, the MPI exchange of endpoints, posting, polling, the per-iteration barriers,
// the result check and the gathering at rank 0 — runs end to end in real processes.
//
// One device "fake0" (RoCE v2, port 1 ACTIVE, MTU 1024, GIDs fe80::1 and ::ffff:127.0.0.1).
// The processes of one run share a "fabric" in POSIX shared memory (name in $CCSIM_FAKE_IBV_SHM):
// a table of queue pairs (owner pid, completion queue, posted receive WQEs) and the completion
// queues. An RC RDMA_WRITE_WITH_IMM copies its bytes into the owning process at the remote
// address with process_vm_writev(2), then consumes one of the target queue pair's posted
// receives and completes it (IBV_WC_RECV_RDMA_WITH_IMM) and the send (IBV_WC_RDMA_WRITE);
// SEND_WITH_IMM the same without data (IBV_WC_RECV). Delivery is immediate and in order; a
// send that finds no posted receive fails with ENOMEM (a real NIC would RNR-retry). Keys and
// access flags are not enforced. It is a test double of the verbs API, not of RDMA timing.

#include <fcntl.h>
#include <infiniband/verbs.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace {

constexpr int kQps = 512;
constexpr int kRecvDepth = 1024;
constexpr int kCqs = 64;
constexpr int kCqe = 4096;

struct QpSlot {
  int pid;
  std::uint32_t cq;
  std::uint32_t rq_head, rq_tail;  // posted receive WQEs: [head, tail)
  std::uint64_t rq[kRecvDepth];
};
struct CqSlot {
  std::uint32_t head, tail;
  ibv_wc wc[kCqe];
};
struct Fabric {
  std::atomic<int> lock;
  std::uint32_t next_qpn;  // qp numbers 1 .. kQps-1
  std::uint32_t next_cq;
  QpSlot qps[kQps];
  CqSlot cqs[kCqs];
};

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "fake_ibverbs: %s\n", what);
  std::abort();
}

Fabric* fabric() {
  static Fabric* f = [] {
    const char* name = std::getenv("CCSIM_FAKE_IBV_SHM");
    if (!name) die("CCSIM_FAKE_IBV_SHM is not set");
    const int fd = shm_open(name, O_RDWR | O_CREAT, 0600);
    if (fd < 0) die("shm_open failed");
    if (ftruncate(fd, sizeof(Fabric)) != 0) die("ftruncate failed");  // zero-filled on creation; same size: untouched
    void* p = mmap(nullptr, sizeof(Fabric), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) die("mmap failed");
    return static_cast<Fabric*>(p);
  }();
  return f;
}

struct Hold {
  Hold() {
    while (fabric()->lock.exchange(1, std::memory_order_acquire) != 0) {}
  }
  ~Hold() { fabric()->lock.store(0, std::memory_order_release); }
};

void push(std::uint32_t cq, const ibv_wc& wc) {
  CqSlot& c = fabric()->cqs[cq];
  if (c.tail - c.head >= kCqe) die("completion queue overflow");
  c.wc[c.tail++ % kCqe] = wc;
}

int poll_cq(ibv_cq* cq, int n, ibv_wc* out) {
  Hold hold;
  CqSlot& c = fabric()->cqs[cq->handle];
  int k = 0;
  while (k < n && c.head != c.tail) out[k++] = c.wc[c.head++ % kCqe];
  return k;
}

int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Hold hold;
  QpSlot& q = fabric()->qps[qp->qp_num];
  for (; wr; wr = wr->next) {
    if (q.rq_tail - q.rq_head >= kRecvDepth) {
      *bad = wr;
      return ENOMEM;
    }
    q.rq[q.rq_tail++ % kRecvDepth] = wr->wr_id;
  }
  return 0;
}

int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
  for (; wr; wr = wr->next) {
    const std::uint32_t peer = qp->handle;  // the destination qp number, set at RTR
    if (qp->state != IBV_QPS_RTS || peer == 0) {
      *bad = wr;
      return EINVAL;
    }
    std::uint32_t bytes = 0;
    if (wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM && wr->num_sge > 0) {
      bytes = wr->sg_list[0].length;
      iovec local{reinterpret_cast<void*>(wr->sg_list[0].addr), bytes};
      iovec remote{reinterpret_cast<void*>(wr->wr.rdma.remote_addr), bytes};
      int pid;
      {
        Hold hold;
        pid = fabric()->qps[peer].pid;
      }
      if (pid == getpid()) {
        std::memmove(remote.iov_base, local.iov_base, bytes);
      } else if (process_vm_writev(pid, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(bytes)) {
        *bad = wr;
        return errno ? errno : EIO;
      }
    } else if (wr->opcode != IBV_WR_SEND_WITH_IMM && wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM) {
      *bad = wr;
      return EINVAL;  // the backend posts nothing else
    }
    Hold hold;
    QpSlot& target = fabric()->qps[peer];
    if (target.rq_head == target.rq_tail) {
      *bad = wr;
      return ENOMEM;
    }
    ibv_wc in{};
    in.wr_id = target.rq[target.rq_head++ % kRecvDepth];
    in.status = IBV_WC_SUCCESS;
    in.opcode = wr->opcode == IBV_WR_SEND_WITH_IMM ? IBV_WC_RECV : IBV_WC_RECV_RDMA_WITH_IMM;
    in.wc_flags = IBV_WC_WITH_IMM;
    in.imm_data = wr->imm_data;
    in.byte_len = bytes;
    in.qp_num = peer;
    push(target.cq, in);
    if (wr->send_flags & IBV_SEND_SIGNALED) {
      ibv_wc out{};
      out.wr_id = wr->wr_id;
      out.status = IBV_WC_SUCCESS;
      out.opcode = wr->opcode == IBV_WR_SEND_WITH_IMM ? IBV_WC_SEND : IBV_WC_RDMA_WRITE;
      out.qp_num = qp->qp_num;
      push(fabric()->qps[qp->qp_num].cq, out);
    }
  }
  return 0;
}

ibv_device fake_device = [] {
  ibv_device d{};
  std::strcpy(d.name, "fake0");
  std::strcpy(d.dev_name, "uverbs0");
  d.node_type = IBV_NODE_CA;
  d.transport_type = IBV_TRANSPORT_IB;
  return d;
}();

void fill_gid(int index, std::uint8_t* raw) {
  std::memset(raw, 0, 16);
  if (index == 0) {
    raw[0] = 0xfe, raw[1] = 0x80, raw[15] = 1;  // fe80::1
  } else {
    raw[10] = raw[11] = 0xff, raw[12] = 127, raw[15] = 1;  // ::ffff:127.0.0.1
  }
}

}  // namespace

extern "C" {

ibv_device** (ibv_get_device_list)(int* n) {
  auto** list = static_cast<ibv_device**>(std::calloc(2, sizeof(ibv_device*)));
  list[0] = &fake_device;
  if (n) *n = 1;
  return list;
}
void ibv_free_device_list(ibv_device** list) { std::free(list); }
const char* ibv_get_device_name(ibv_device* d) { return d->name; }

ibv_context* ibv_open_device(ibv_device* d) {
  auto* c = static_cast<ibv_context*>(std::calloc(1, sizeof(ibv_context)));
  c->device = d;
  c->ops.poll_cq = poll_cq;
  c->ops.post_send = post_send;
  c->ops.post_recv = post_recv;
  c->abi_compat = nullptr;  // not an extended context: the inline wrappers call the functions below
  fabric();
  return c;
}
int ibv_close_device(ibv_context* c) {
  std::free(c);
  return 0;
}

int ibv_query_device(ibv_context*, ibv_device_attr* a) {
  std::memset(a, 0, sizeof(*a));
  a->max_qp_wr = kRecvDepth;
  a->max_cqe = kCqe;
  a->max_sge = 1;
  a->phys_port_cnt = 1;
  return 0;
}
int (ibv_query_port)(ibv_context*, std::uint8_t port, _compat_ibv_port_attr* compat) {
  if (port != 1) return EINVAL;
  auto* a = reinterpret_cast<ibv_port_attr*>(compat);
  a->state = IBV_PORT_ACTIVE;
  a->max_mtu = a->active_mtu = IBV_MTU_1024;
  a->gid_tbl_len = 2;
  a->max_msg_sz = 1u << 31;
  a->link_layer = IBV_LINK_LAYER_ETHERNET;
  return 0;
}
int _ibv_query_gid_ex(ibv_context*, std::uint32_t port, std::uint32_t index, ibv_gid_entry* e, std::uint32_t, std::size_t) {
  if (port != 1 || index > 1) return ENODATA;
  fill_gid(static_cast<int>(index), e->gid.raw);
  e->gid_index = index;
  e->port_num = port;
  e->gid_type = IBV_GID_TYPE_ROCE_V2;
  return 0;
}
int ibv_query_gid(ibv_context*, std::uint8_t port, int index, ibv_gid* gid) {
  if (port != 1 || index < 0 || index > 1) return EINVAL;
  fill_gid(index, gid->raw);
  return 0;
}

ibv_pd* ibv_alloc_pd(ibv_context* c) {
  auto* pd = static_cast<ibv_pd*>(std::calloc(1, sizeof(ibv_pd)));
  pd->context = c;
  return pd;
}
int ibv_dealloc_pd(ibv_pd* pd) {
  std::free(pd);
  return 0;
}
ibv_mr* (ibv_reg_mr)(ibv_pd* pd, void* addr, std::size_t length, int) {
  auto* mr = static_cast<ibv_mr*>(std::calloc(1, sizeof(ibv_mr)));
  mr->context = pd->context;
  mr->pd = pd;
  mr->addr = addr;
  mr->length = length;
  mr->lkey = mr->rkey = 0x1234;
  return mr;
}
int ibv_dereg_mr(ibv_mr* mr) {
  std::free(mr);
  return 0;
}

ibv_cq* ibv_create_cq(ibv_context* c, int cqe, void*, ibv_comp_channel*, int) {
  if (cqe > kCqe) {
    errno = EINVAL;
    return nullptr;
  }
  Hold hold;
  if (fabric()->next_cq >= kCqs) die("out of completion queues");
  auto* cq = static_cast<ibv_cq*>(std::calloc(1, sizeof(ibv_cq)));
  cq->context = c;
  cq->cqe = cqe;
  cq->handle = fabric()->next_cq++;
  return cq;
}
int ibv_destroy_cq(ibv_cq* cq) {
  std::free(cq);
  return 0;
}

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* init) {
  if (init->qp_type != IBV_QPT_RC || init->cap.max_recv_wr > kRecvDepth || init->send_cq != init->recv_cq) {
    errno = EINVAL;
    return nullptr;
  }
  Hold hold;
  Fabric* f = fabric();
  if (f->next_qpn + 1 >= kQps) die("out of queue pairs");
  auto* qp = static_cast<ibv_qp*>(std::calloc(1, sizeof(ibv_qp)));
  qp->context = pd->context;
  qp->pd = pd;
  qp->send_cq = init->send_cq;
  qp->recv_cq = init->recv_cq;
  qp->qp_num = ++f->next_qpn;
  qp->state = IBV_QPS_RESET;
  qp->qp_type = IBV_QPT_RC;
  QpSlot& s = f->qps[qp->qp_num];
  s.pid = getpid();
  s.cq = init->send_cq->handle;
  s.rq_head = s.rq_tail = 0;
  return qp;
}
int ibv_destroy_qp(ibv_qp* qp) {
  std::free(qp);
  return 0;
}

int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* a, int mask) {
  if (!(mask & IBV_QP_STATE)) return EINVAL;
  const ibv_qp_state from = qp->state, to = a->qp_state;
  const bool ok = (from == IBV_QPS_RESET && to == IBV_QPS_INIT) || (from == IBV_QPS_INIT && to == IBV_QPS_RTR) ||
                  (from == IBV_QPS_RTR && to == IBV_QPS_RTS);
  if (!ok) return EINVAL;
  if (to == IBV_QPS_RTR) {
    const int needed = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    if ((mask & needed) != needed || a->dest_qp_num == 0 || a->dest_qp_num >= kQps) return EINVAL;
    if (!a->ah_attr.is_global) return EINVAL;  // RoCE: addressed by GID
    qp->handle = a->dest_qp_num;
  }
  if (to == IBV_QPS_RTS) {
    const int needed = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
    if ((mask & needed) != needed) return EINVAL;
  }
  qp->state = to;
  return 0;
}

const char* ibv_port_state_str(ibv_port_state s) { return s == IBV_PORT_ACTIVE ? "ACTIVE" : "not active"; }
const char* ibv_wc_status_str(ibv_wc_status s) { return s == IBV_WC_SUCCESS ? "success" : "error"; }

}  // extern "C"
