#include "planner/workload/run_trace.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "planner/workload/perfetto_trace.pb.h"

namespace ccsim::planner {

namespace {

constexpr std::size_t kProgressEvery = 65536;

/// One (GPU, stream) track: its node (the JSON's pid) and the JSON's tid.
struct Track {
  int node = 0;
  int tid = 0;
  std::string name;
};

/// The tracks in the JSON's order: per pipeline stage, its node (process, once) and then its
/// streams. `on_process(node, name)` and `on_thread(track)`.
template <typename OnProcess, typename OnThread>
void for_each_track(const RunContext& c, OnProcess&& on_process, OnThread&& on_thread) {
  const auto& r = c.result;
  const auto& t = c.cluster.topology;
  std::vector<bool> named(c.cluster.node_group.size(), false);
  for (std::size_t stage = 0; stage < r.stage_gpu.size(); ++stage) {
    const models::DeviceId gpu = r.stage_gpu[stage];
    const int node = t.device(gpu).node;
    if (static_cast<std::size_t>(node) >= named.size()) named.resize(static_cast<std::size_t>(node) + 1, false);
    if (!named[static_cast<std::size_t>(node)]) {
      named[static_cast<std::size_t>(node)] = true;
      const auto group = static_cast<std::size_t>(c.cluster.node_group[static_cast<std::size_t>(node)]);
      on_process(node, fmt::format("node {} ({})", node, c.cluster.spec.groups[group].node.name));
    }
    for (int st = 0; st < models::kStreams; ++st) {
      Track track;
      track.node = node;
      track.tid = t.device(gpu).local * models::kStreams + st;
      track.name = fmt::format("{} ({}stage {}) {}", t.name(gpu),
                               r.classes.size() > 1 ? fmt::format("class {} ", r.program.ranks[stage].replica_class) : std::string(),
                               r.program.ranks[stage].stage, models::to_string(static_cast<models::Stream>(st)));
      on_thread(track);
    }
  }
}

/// The op's (node, tid) and slice name.
struct SliceSite {
  int node = 0;
  int tid = 0;
};

SliceSite slice_site(const RunContext& c, std::size_t i) {
  const auto& r = c.result;
  const auto& t = c.cluster.topology;
  const models::DeviceId gpu = r.stage_gpu[static_cast<std::size_t>(r.program.op_rank[i])];
  return {t.device(gpu).node, t.device(gpu).local * models::kStreams + static_cast<int>(r.program.ops[i].stream)};
}

std::string slice_name(const models::ProgramOp& op) {
  return op.micro_batch >= 0 ? fmt::format("{} mb{}", op.name, op.micro_batch) : op.name;
}

bool has_slice(const RunContext& c, std::size_t i) { return c.result.timing[i].end > c.result.timing[i].start; }

// ---- JSON, written as nlohmann::json's compact dump() writes it (byte for byte what the
// document-tree version of this writer produced): strings escaped as its serializer escapes
// them (ensure_ascii off), doubles by its own shortest-round-trip conversion.

void put_string(std::string& out, std::string_view s) {
  out += '"';
  for (const char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (u < 0x20) fmt::format_to(std::back_inserter(out), "\\u{:04x}", u);
        else out += ch;
    }
  }
  out += '"';
}

void put_double(std::string& out, double x) {
  if (!std::isfinite(x)) {
    out += "null";
    return;
  }
  std::array<char, 64> buf{};
  char* end = nlohmann::detail::to_chars(buf.data(), buf.data() + buf.size(), x);
  out.append(buf.data(), static_cast<std::size_t>(end - buf.data()));
}

void put_int(std::string& out, long long v) { fmt::format_to(std::back_inserter(out), "{}", v); }

/// Nanoseconds, rounded to the nearest, of a time in seconds.
double rounded_ns(double s) { return std::round(s * 1e9); }

}  // namespace

TraceSize trace_size(const RunContext& c) {
  TraceSize s;
  if (!c.result.feasible) return s;
  for (std::size_t i = 0; i < c.result.program.ops.size(); ++i) s.slices += has_slice(c, i) ? 1 : 0;
  for_each_track(c, [&](int, const std::string&) { ++s.tracks; }, [&](const Track&) { ++s.tracks; });
  // Bytes per slice measured on docs/performance.md's 256-GPU step (trace.json 127.9 MB and
  // trace.perfetto-trace 61.4 MB for 641,324 slices); the tracks' share is negligible.
  s.json_bytes = 200.0 * static_cast<double>(s.slices);
  s.perfetto_bytes = 96.0 * static_cast<double>(s.slices);
  return s;
}

std::string trace_json(const RunContext& c, const std::function<void(std::size_t, std::size_t)>& progress) {
  const auto& r = c.result;
  std::string out;
  std::size_t total = 0;
  if (r.feasible) {
    for (std::size_t i = 0; i < r.program.ops.size(); ++i) total += has_slice(c, i) ? 1 : 0;
    out.reserve(240 * total + 4096);
  }
  out += "{\"traceEvents\":[";
  bool first = true;
  const auto open = [&] {
    if (!first) out += ',';
    first = false;
  };
  if (r.feasible) {
    for_each_track(
        c,
        [&](int node, const std::string& name) {
          open();
          out += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":";
          put_int(out, node);
          out += ",\"args\":{\"name\":";
          put_string(out, name);
          out += "}},{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":";
          put_int(out, node);
          out += ",\"args\":{\"sort_index\":";
          put_int(out, node);
          out += "}}";
        },
        [&](const Track& track) {
          open();
          out += "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":";
          put_int(out, track.node);
          out += ",\"tid\":";
          put_int(out, track.tid);
          out += ",\"args\":{\"name\":";
          put_string(out, track.name);
          out += "}},{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":";
          put_int(out, track.node);
          out += ",\"tid\":";
          put_int(out, track.tid);
          out += ",\"args\":{\"sort_index\":";
          put_int(out, track.tid);
          out += "}}";
        });
    std::size_t done = 0;
    for (std::size_t i = 0; i < r.program.ops.size(); ++i) {
      if (!has_slice(c, i)) continue;
      const auto& op = r.program.ops[i];
      const auto& tm = r.timing[i];
      const SliceSite site = slice_site(c, i);
      const std::string_view pass = models::to_string(op.pass);
      open();
      out += "{\"name\":";
      put_string(out, slice_name(op));
      out += ",\"cat\":";
      put_string(out, pass);
      out += ",\"ph\":\"X\",\"ts\":";
      put_double(out, rounded_ns(tm.start) / 1e3);
      out += ",\"dur\":";
      put_double(out, rounded_ns(tm.end - tm.start) / 1e3);
      out += ",\"pid\":";
      put_int(out, site.node);
      out += ",\"tid\":";
      put_int(out, site.tid);
      out += ",\"args\":{\"pass\":";
      put_string(out, pass);
      if (op.micro_batch >= 0) {
        out += ",\"micro_batch\":";
        put_int(out, op.micro_batch);
      }
      if (op.layer >= 0) {
        out += ",\"layer\":";
        put_int(out, op.layer);
      }
      if (op.flops > 0) {
        out += ",\"flops\":";
        put_double(out, op.flops);
      }
      if (op.bytes > 0) {
        out += ",\"bytes\":";
        put_double(out, op.bytes);
      }
      if (r.op_comm[i] >= 0) {
        const auto& cost = r.comm_costs[static_cast<std::size_t>(r.op_comm[i])];
        out += ",\"algorithm\":";
        put_string(out, cost.algorithm);
        out += ",\"protocol\":";
        put_string(out, cost.protocol);
      }
      out += "}}";
      if (progress && ++done % kProgressEvery == 0) progress(done, total);
    }
  }
  out += "],\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"ccsim run\",\"scenario\":";
  put_string(out, c.scenario.name);
  out += ",\"note\":\"one GPU per pipeline stage is shown; its TP/CP/DP peers run the same timeline\"}}\n";
  if (progress) progress(total, total);
  return out;
}

namespace {

/// Appends `packet` as one `Trace.packet` (field 1, length-delimited): a Trace is the
/// concatenation of its packets, so the file is written one packet at a time.
void put_packet(std::string& out, const perfetto::TracePacket& packet) {
  const std::size_t size = packet.ByteSizeLong();
  out += static_cast<char>(0x0A);  // field 1, wire type 2
  for (std::uint64_t v = size; ; v >>= 7) {
    if (v < 0x80) {
      out += static_cast<char>(v);
      break;
    }
    out += static_cast<char>((v & 0x7F) | 0x80);
  }
  packet.AppendToString(&out);
}

/// The strings a sequence sends once and then names by iid (Perfetto's interning: an event
/// name "qkv mb3" is sent with the first slice that uses it, later slices carry its number).
class Interned {
 public:
  /// The iid of `name` in `table` (1, 2, ...); a new one is added to `packet`'s interned data by
  /// `add(data, iid, name)`.
  template <typename Add>
  std::uint64_t iid(std::unordered_map<std::string, std::uint64_t>& table, const std::string& name, Add&& add) {
    const auto [it, inserted] = table.try_emplace(name, table.size() + 1);
    if (inserted) add(it->second, name);
    return it->second;
  }
  std::unordered_map<std::string, std::uint64_t> names, categories, annotations;
};

constexpr std::uint32_t kSequence = 1;
constexpr int kTidsPerNode = 100000;

std::uint64_t process_uuid(int node) { return static_cast<std::uint64_t>(node) + 1; }
std::uint64_t thread_uuid(int node, int tid) {
  return (static_cast<std::uint64_t>(node) + 1) * kTidsPerNode + static_cast<std::uint64_t>(tid) + 1;
}

}  // namespace

std::string trace_perfetto(const RunContext& c, const std::function<void(std::size_t, std::size_t)>& progress) {
  const auto& r = c.result;
  std::string out;
  perfetto::TracePacket packet;
  bool first = true;
  const auto start_packet = [&] {
    packet.Clear();
    packet.set_trusted_packet_sequence_id(kSequence);
    if (first) packet.set_sequence_flags(perfetto::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
    first = false;
  };
  if (!r.feasible) return out;
  // Tracks: a process per node, a thread per (GPU, stream), with the JSON's sort order.
  for_each_track(
      c,
      [&](int node, const std::string& name) {
        start_packet();
        perfetto::TrackDescriptor* d = packet.mutable_track_descriptor();
        d->set_uuid(process_uuid(node));
        perfetto::ProcessDescriptor* p = d->mutable_process();
        p->set_pid(node + 1);
        p->set_process_name(name);
        p->set_legacy_sort_index(node);
        put_packet(out, packet);
      },
      [&](const Track& track) {
        start_packet();
        perfetto::TrackDescriptor* d = packet.mutable_track_descriptor();
        d->set_uuid(thread_uuid(track.node, track.tid));
        d->set_parent_uuid(process_uuid(track.node));
        perfetto::ThreadDescriptor* th = d->mutable_thread();
        th->set_pid(track.node + 1);
        th->set_tid(static_cast<int>(thread_uuid(track.node, track.tid)));
        th->set_thread_name(track.name);
        th->set_legacy_sort_index(track.tid);
        put_packet(out, packet);
      });
  // Slices track by track in time order, so that a slice's end precedes the next one's
  // begin on its track even where the two share a timestamp.
  std::vector<std::pair<std::uint64_t, std::size_t>> slices;  // (track uuid, op)
  for (std::size_t i = 0; i < r.program.ops.size(); ++i) {
    if (!has_slice(c, i)) continue;
    const SliceSite site = slice_site(c, i);
    slices.emplace_back(thread_uuid(site.node, site.tid), i);
  }
  std::stable_sort(slices.begin(), slices.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return rounded_ns(r.timing[a.second].start) < rounded_ns(r.timing[b.second].start);
  });
  out.reserve(out.size() + 64 * slices.size());
  std::size_t done = 0;
  Interned interned;
  for (const auto& [uuid, i] : slices) {
    const auto& op = r.program.ops[i];
    const auto& tm = r.timing[i];
    const double begin_ns = rounded_ns(tm.start);
    start_packet();
    packet.set_sequence_flags(perfetto::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
    packet.set_timestamp(static_cast<std::uint64_t>(begin_ns));
    perfetto::TrackEvent* e = packet.mutable_track_event();
    e->set_type(perfetto::TrackEvent::TYPE_SLICE_BEGIN);
    e->set_track_uuid(uuid);
    const auto data = [&] { return packet.mutable_interned_data(); };
    e->set_name_iid(interned.iid(interned.names, slice_name(op), [&](std::uint64_t id, const std::string& n) {
      perfetto::EventName* x = data()->add_event_names();
      x->set_iid(id);
      x->set_name(n);
    }));
    const std::string pass(models::to_string(op.pass));
    e->add_category_iids(interned.iid(interned.categories, pass, [&](std::uint64_t id, const std::string& n) {
      perfetto::EventCategory* x = data()->add_event_categories();
      x->set_iid(id);
      x->set_name(n);
    }));
    const auto annotation = [&](const char* name) {
      perfetto::DebugAnnotation* a = e->add_debug_annotations();
      a->set_name_iid(interned.iid(interned.annotations, name, [&](std::uint64_t id, const std::string& n) {
        perfetto::DebugAnnotationName* x = data()->add_debug_annotation_names();
        x->set_iid(id);
        x->set_name(n);
      }));
      return a;
    };
    annotation("pass")->set_string_value(pass);
    if (op.micro_batch >= 0) annotation("micro_batch")->set_int_value(op.micro_batch);
    if (op.layer >= 0) annotation("layer")->set_int_value(op.layer);
    if (op.flops > 0) annotation("flops")->set_double_value(op.flops);
    if (op.bytes > 0) annotation("bytes")->set_double_value(op.bytes);
    if (r.op_comm[i] >= 0) {
      const auto& cost = r.comm_costs[static_cast<std::size_t>(r.op_comm[i])];
      annotation("algorithm")->set_string_value(cost.algorithm);
      annotation("protocol")->set_string_value(cost.protocol);
    }
    put_packet(out, packet);
    start_packet();
    // The end as begin + the JSON's rounded duration, so that both formats give one duration.
    packet.set_timestamp(static_cast<std::uint64_t>(begin_ns + rounded_ns(tm.end - tm.start)));
    e = packet.mutable_track_event();
    e->set_type(perfetto::TrackEvent::TYPE_SLICE_END);
    e->set_track_uuid(uuid);
    put_packet(out, packet);
    if (progress && ++done % kProgressEvery == 0) progress(done, slices.size());
  }
  if (progress) progress(slices.size(), slices.size());
  return out;
}

}  // namespace ccsim::planner
