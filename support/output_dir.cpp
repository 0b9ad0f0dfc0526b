#include "support/output_dir.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <unistd.h>

#include "support/atomic_file.hpp"
#include "support/temp_files.hpp"

namespace ccsim::support {

namespace fs = std::filesystem;

OutputDir::OutputDir(std::string dir, OutputDirRules rules) : dir_(std::move(dir)), rules_(std::move(rules)) {}

OutputDir::~OutputDir() {
  std::error_code ec;
  if (created_ && fs::is_empty(dir_, ec) && !ec) fs::remove(dir_, ec);
}

void OutputDir::prepare() {
  std::error_code ec;
  if (fs::exists(dir_, ec) && !fs::is_directory(dir_, ec)) {
    throw OutputError(fmt::format("{} {}: exists and is not a directory", rules_.option, dir_));
  }
  for (const std::string& name : rules_.regular_files) {
    const fs::path f = fs::path(dir_) / name;
    if (fs::exists(f, ec) && !fs::is_regular_file(f, ec)) {
      throw OutputError(fmt::format("{} {}: {} exists and is not a regular file", rules_.option, dir_, name));
    }
  }
  if (rules_.create != CreateDir::BeforeWork) return;
  const bool existed = fs::exists(dir_, ec);
  create();
  created_ = !existed;
  if (rules_.probe_prefix.empty()) return;
  // Writable? Found now, not after the work.
  const fs::path probe = fs::path(dir_) / fmt::format("{}.{}", rules_.probe_prefix, ::getpid());
  // Registered for removal on a signal while it exists; a path too long to register is one
  // fopen refuses as well (ENAMETOOLONG), with the message below.
  std::optional<TempFileGuard> guard;
  if (probe.native().size() <= static_cast<std::size_t>(kMaxTempPathBytes)) guard.emplace(probe.string());
  if (FILE* f = std::fopen(probe.c_str(), "w")) {
    std::fclose(f);
    fs::remove(probe, ec);
  } else {
    throw OutputError(fmt::format("{} {}: cannot write into the directory ({})", rules_.option, dir_, std::strerror(errno)));
  }
}

void OutputDir::create() const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_)) {
    throw OutputError(fmt::format("{} {}: cannot create the directory ({})", rules_.option, dir_, ec ? ec.message() : "unknown"));
  }
}

void OutputDir::remove_stale(const std::string& name, Stale how) const {
  const fs::path f = fs::path(dir_) / name;
  std::error_code ec;
  switch (how) {
    case Stale::RemoveIfRegular:
      if (fs::is_regular_file(fs::symlink_status(f, ec))) fs::remove(f, ec);
      return;
    case Stale::Remove:
      fs::remove(f, ec);
      return;
    case Stale::RemoveOrThrow:
      fs::remove(f, ec);
      if (ec) throw OutputError(fmt::format("{} {}: cannot replace {} ({})", rules_.option, dir_, name, ec.message()));
      return;
  }
}

void OutputDir::write(const std::string& name, std::string_view content) const { write_file_atomic(path(name), content); }

std::string OutputDir::path(const std::string& name) const { return (fs::path(dir_) / name).string(); }

}  // namespace ccsim::support
