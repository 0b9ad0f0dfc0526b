#pragma once
// Helpers shared by the Catch2 tests: paths into the source tree.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "models/hardware/catalog.hpp"
#include "models/hardware/cluster.hpp"
#include "models/scenario/scenario.hpp"
#include "models/collective/schedule.hpp"

namespace ccsim::test {

/// The source tree's root (defined in tests/main.cpp, the one file that knows it).
std::string source_dir();
inline std::string source_path(const std::string& relative) { return source_dir() + "/" + relative; }

inline const models::Catalog& shipped_catalog() {
  static const models::Catalog catalog = models::Catalog::load(source_path("scenarios/hardware"));
  return catalog;
}

inline models::Cluster shipped_cluster(const std::string& scenario) {
  return models::build_cluster(models::load_scenario(source_path("scenarios/" + scenario), shipped_catalog()).cluster);
}

/// Adds a send of `bytes` from rank `from` to rank `to` on `channel`, and its matching receive,
/// to `s` (input buffer offset 0 to output buffer offset 0).
inline void add_send_recv(models::Schedule& s, int from, int to, std::uint64_t bytes, int channel) {
  models::Op send;
  send.kind = models::OpKind::Send;
  send.peer = to;
  send.channel = channel;
  send.src = {models::BufferKind::Input, 0, bytes};
  s.ranks[static_cast<std::size_t>(from)].add(send);
  models::Op recv;
  recv.kind = models::OpKind::Recv;
  recv.peer = from;
  recv.channel = channel;
  recv.dst = {models::BufferKind::Output, 0, bytes};
  s.ranks[static_cast<std::size_t>(to)].add(recv);
}

/// A fresh directory under the system temp dir, removed at scope exit.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() / ("ccsim-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string write(const std::string& name, const std::string& text) const {
    const auto file = path / name;
    std::ofstream(file) << text;
    return file.string();
  }
  static int& counter() {
    static int c = 0;
    return c;
  }
};

/// The bytes of the file at `p` (empty when it cannot be read).
inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Names in `dir`, sorted, hidden ones included.
inline std::vector<std::string> entries(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// The cluster of a scenario file given relative to the source tree (e.g. tests/data/real-cases/X.yaml).
inline models::Cluster cluster_at(const std::string& relative) {
  return models::build_cluster(models::load_scenario(source_path(relative), shipped_catalog()).cluster);
}

}  // namespace ccsim::test
