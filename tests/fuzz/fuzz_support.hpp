#pragma once
// Shared by the libFuzzer targets in tests/fuzz/ (built with -DCCSIM_FUZZ=ON, see scripts/fuzz).
//
// Every target feeds the fuzzer's bytes to a reader through its public, path-based entry point:
// the bytes go to one file per process (under $TMPDIR, else /dev/shm, else /tmp), rewritten for
// each input, and the reader loads that path. The contract checked is the CLI's: a reader either
// succeeds or throws one of the user-input errors that `ccsim` turns into exit code 2
// (support::InputError, support::OutputError; cli/main.cpp). Any other exception is a bug, so it
// is printed and the process aborts, which libFuzzer reports as a crash with the input saved.

#include <cxxabi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <typeinfo>

#include "support/atomic_file.hpp"
#include "support/input_error.hpp"

namespace ccsim::fuzz {

/// A directory of this process's own (created on first use, removed at exit).
inline const std::filesystem::path& work_dir() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path base = "/dev/shm";
    if (const char* tmp = std::getenv("TMPDIR"); tmp != nullptr && *tmp != '\0') base = tmp;
    std::error_code ec;
    if (!std::filesystem::is_directory(base, ec)) base = "/tmp";
    std::filesystem::path d = base / ("ccsim-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::atexit([] { std::error_code ignored; std::filesystem::remove_all(work_dir(), ignored); });
    return d;
  }();
  return dir;
}

/// Writes `size` bytes to work_dir()/`name` (truncating it) and returns the path.
inline std::string write_input(const std::string& name, const std::uint8_t* data, std::size_t size) {
  const std::filesystem::path path = work_dir() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) {
    std::fprintf(stderr, "ccsim fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path.string();
}

/// The readable name of the dynamic type of `e` ("std::out_of_range", not "St12out_of_range").
inline std::string type_name(const std::exception& e) {
  int status = 0;
  const std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? std::string(name.get()) : std::string(typeid(e).name());
}

/// Runs `read`; returns normally when it succeeds or throws a user-input error, aborts on any
/// other exception.
template <typename Read>
void expect_success_or_input_error(const char* reader, Read&& read) {
  try {
    read();
  } catch (const support::InputError&) {
  } catch (const support::OutputError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ccsim fuzz: %s threw %s (not a user-input error): %s\n", reader, type_name(e).c_str(), e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "ccsim fuzz: %s threw a non-std::exception\n", reader);
    std::abort();
  }
}

}  // namespace ccsim::fuzz
