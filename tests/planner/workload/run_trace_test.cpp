// The run's trace in both formats (planner/workload/run_trace.hpp): the Perfetto protobuf trace,
// parsed back with the classes protoc generates from perfetto_trace.proto, holds the same
// slices as the JSON trace (count, names, categories, start and duration in nanoseconds, track),
// and the same process and thread names; the JSON is valid JSON of Chrome's trace event format.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/scenario/scenario.hpp"
#include "planner/tuning/cost_model.hpp"
#include "planner/workload/perfetto_trace.pb.h"
#include "planner/workload/run_trace.hpp"
#include "planner/workload/workload_runner.hpp"
#include "test_support.hpp"

using namespace ccsim;

namespace {

/// The interned strings of a Perfetto trace's one sequence, read in file order (as
/// trace_processor reads them).
struct InternedStrings {
  std::map<std::uint64_t, std::string> names, categories, annotations;
  void read(const perfetto::TracePacket& p) {
    if (!p.has_interned_data()) return;
    for (const auto& x : p.interned_data().event_names()) REQUIRE(names.emplace(x.iid(), x.name()).second);
    for (const auto& x : p.interned_data().event_categories()) REQUIRE(categories.emplace(x.iid(), x.name()).second);
    for (const auto& x : p.interned_data().debug_annotation_names()) REQUIRE(annotations.emplace(x.iid(), x.name()).second);
  }
};

/// One slice: (track name, slice name, category, start ns, duration ns).
using Slice = std::tuple<std::string, std::string, std::string, long long, long long>;

struct Run {
  models::Scenario scenario;
  models::Cluster cluster;
  planner::WorkloadResult result;
};

Run run_scenario(const std::string& file) {
  Run r{models::load_scenario(test::source_path(file), test::shipped_catalog()), {}, {}};
  r.cluster = models::build_cluster(r.scenario.cluster);
  const planner::CostModel costs = planner::CostModel::load(planner::CostModel::default_path());
  planner::WorkloadRunner runner(r.scenario, r.cluster, costs,
                                 planner::ComputeCalibration::load(planner::ComputeCalibration::default_path(), "H100-SXM5"),
                                 models::EngineKind::Analytic);
  r.result = runner.run();
  return r;
}

}  // namespace

TEST_CASE("run trace: the Perfetto protobuf trace parses back into the JSON trace's slices", "[workload][trace]") {
  // Llama-3-70B on 64 H100 (TP8 PP2 DP4): two pipeline stages shown, 2 × 6 stream tracks.
  const Run run = run_scenario("scenarios/workloads/llama3-70b-train-64xh100.yaml");
  REQUIRE(run.result.feasible);
  const planner::RunContext ctx{run.scenario, run.cluster, run.result};

  // JSON: thread names by (pid, tid), then the 'X' slices.
  const nlohmann::json j = nlohmann::json::parse(planner::trace_json(ctx));
  std::map<std::pair<int, int>, std::string> json_threads;
  std::vector<std::string> json_processes;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") json_threads[{e["pid"].get<int>(), e["tid"].get<int>()}] = e["args"]["name"];
    if (e["ph"] == "M" && e["name"] == "process_name") json_processes.push_back(e["args"]["name"]);
  }
  std::vector<Slice> json_slices;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    // ts and dur are microseconds with 3 decimals: whole nanoseconds.
    json_slices.emplace_back(json_threads.at({e["pid"].get<int>(), e["tid"].get<int>()}), e["name"], e["cat"],
                             std::llround(e["ts"].get<double>() * 1e3), std::llround(e["dur"].get<double>() * 1e3));
  }
  REQUIRE(json_threads.size() == 2 * 6);
  REQUIRE(json_slices.size() > 1000);

  // Perfetto: descriptors first, then BEGIN/END pairs on each track (no nesting: one op at a
  // time per stream).
  const std::string bytes = planner::trace_perfetto(ctx);
  perfetto::Trace trace;
  REQUIRE(trace.ParseFromString(bytes));
  std::map<std::uint64_t, std::string> tracks;
  std::vector<std::string> processes;
  std::map<std::uint64_t, std::vector<std::pair<const perfetto::TracePacket*, bool>>> open;  // begins awaiting their end
  std::vector<Slice> proto_slices;
  std::size_t begins = 0, ends = 0;
  InternedStrings interned;
  std::map<const perfetto::TracePacket*, std::pair<std::string, std::string>> begin_names;  // (name, category)
  for (const perfetto::TracePacket& p : trace.packet()) {
    CHECK(p.trusted_packet_sequence_id() == 1);
    interned.read(p);
    if (p.has_track_descriptor()) {
      const auto& d = p.track_descriptor();
      if (d.has_thread()) {
        tracks[d.uuid()] = d.thread().thread_name();
        CHECK(d.thread().pid() > 0);
        CHECK(d.thread().tid() > 0);  // pid and tid 0 are the kernel's idle task in Perfetto
      }
      if (d.has_process()) processes.push_back(d.process().process_name());
      continue;
    }
    REQUIRE(p.has_track_event());
    const auto& e = p.track_event();
    REQUIRE(tracks.count(e.track_uuid()) == 1);
    auto& stack = open[e.track_uuid()];
    if (e.type() == perfetto::TrackEvent::TYPE_SLICE_BEGIN) {
      ++begins;
      REQUIRE(stack.empty());
      // Interned strings are defined before (or in) the packet that uses them; such a packet
      // says it needs the sequence's incremental state.
      CHECK(p.sequence_flags() == perfetto::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
      REQUIRE(e.category_iids_size() == 1);
      REQUIRE(interned.names.count(e.name_iid()) == 1);
      REQUIRE(interned.categories.count(e.category_iids(0)) == 1);
      begin_names[&p] = {interned.names[e.name_iid()], interned.categories[e.category_iids(0)]};
      stack.emplace_back(&p, true);
    } else {
      REQUIRE(e.type() == perfetto::TrackEvent::TYPE_SLICE_END);
      ++ends;
      REQUIRE(stack.size() == 1);
      const perfetto::TracePacket& b = *stack.back().first;
      REQUIRE(p.timestamp() >= b.timestamp());
      proto_slices.emplace_back(tracks[e.track_uuid()], begin_names[&b].first, begin_names[&b].second,
                                static_cast<long long>(b.timestamp()), static_cast<long long>(p.timestamp() - b.timestamp()));
      stack.clear();
    }
  }
  CHECK(begins == json_slices.size());
  CHECK(ends == json_slices.size());
  CHECK(processes == json_processes);
  std::vector<std::string> json_track_names, proto_track_names;
  for (const auto& [key, name] : json_threads) json_track_names.push_back(name);
  for (const auto& [uuid, name] : tracks) proto_track_names.push_back(name);
  std::sort(json_track_names.begin(), json_track_names.end());
  std::sort(proto_track_names.begin(), proto_track_names.end());
  CHECK(proto_track_names == json_track_names);
  std::sort(json_slices.begin(), json_slices.end());
  std::sort(proto_slices.begin(), proto_slices.end());
  REQUIRE(proto_slices.size() == json_slices.size());
  CHECK(proto_slices == json_slices);

  // The notice's counts: every slice and every track.
  const planner::TraceSize size = planner::trace_size(ctx);
  CHECK(size.slices == json_slices.size());
  CHECK(size.tracks == json_threads.size() + json_processes.size());
}

TEST_CASE("run trace: an op's arguments reach both formats", "[workload][trace]") {
  // The first communication op with an algorithm: the JSON's args and the Perfetto BEGIN
  // packet's debug annotations carry the same algorithm, protocol and bytes.
  const Run run = run_scenario("scenarios/workloads/llama3-70b-train-64xh100.yaml");
  const planner::RunContext ctx{run.scenario, run.cluster, run.result};
  const nlohmann::json j = nlohmann::json::parse(planner::trace_json(ctx));
  const nlohmann::json* first = nullptr;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X" && e["args"].contains("algorithm")) {
      first = &e;
      break;
    }
  }
  REQUIRE(first != nullptr);
  perfetto::Trace trace;
  REQUIRE(trace.ParseFromString(planner::trace_perfetto(ctx)));
  bool found = false;
  InternedStrings interned;
  for (const perfetto::TracePacket& p : trace.packet()) {
    interned.read(p);
    if (!p.has_track_event() || p.track_event().type() != perfetto::TrackEvent::TYPE_SLICE_BEGIN) continue;
    if (interned.names[p.track_event().name_iid()] != (*first)["name"].get<std::string>()) continue;
    if (static_cast<long long>(p.timestamp()) != std::llround((*first)["ts"].get<double>() * 1e3)) continue;
    std::map<std::string, const perfetto::DebugAnnotation*> args;
    for (const auto& a : p.track_event().debug_annotations()) args[interned.annotations.at(a.name_iid())] = &a;
    REQUIRE(args.count("algorithm") == 1);
    CHECK(args["algorithm"]->string_value() == (*first)["args"]["algorithm"].get<std::string>());
    CHECK(args["protocol"]->string_value() == (*first)["args"]["protocol"].get<std::string>());
    CHECK(args["bytes"]->double_value() == (*first)["args"]["bytes"].get<double>());
    CHECK(args["pass"]->string_value() == (*first)["args"]["pass"].get<std::string>());
    found = true;
    break;
  }
  CHECK(found);
}
