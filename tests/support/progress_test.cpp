// The progress line (support/progress.hpp): its text, when it is shown, that it is erased at
// the end, and that updates from many threads at once leave whole lines.

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>

#include "support/parallel_for.hpp"
#include "support/progress.hpp"

using namespace ccsim;

TEST_CASE("progress line: counts, percentage, elapsed time and the estimate of the time left", "[support][progress]") {
  // No total: what and elapsed time only.
  CHECK(support::progress_line("ccsim run", "writing report.json", 0, 0, 0.4) == "ccsim run: writing report.json, 0 s");
  CHECK(support::progress_line("ccsim calibrate", "simulations", 12, 0, 3.0) == "ccsim calibrate: simulations 12, 3 s");
  // 10 of 40 after 3 s: 25 %, and 3 × 30 / 10 = 9 s left.
  CHECK(support::progress_line("ccsim plan", "candidates", 10, 40, 3.0) == "ccsim plan: candidates 10/40 (25 %), 3 s, about 9 s left");
  // Under 2 s, or under 5 % done: no estimate (it would be noise).
  CHECK(support::progress_line("ccsim plan", "candidates", 10, 40, 1.0) == "ccsim plan: candidates 10/40 (25 %), 1 s");
  CHECK(support::progress_line("ccsim plan", "candidates", 1, 40, 30.0) == "ccsim plan: candidates 1/40 (2 %), 30 s");
  // Done: no estimate. Minutes above 100 s: 250 s = 4 min 10 s; at 2/40 (5 %): 250 × 38 / 2 =
  // 4,750 s = 1 h 19 min left; at 2/42 (4.8 %) no estimate yet.
  CHECK(support::progress_line("x", "y", 40, 40, 250.0) == "x: y 40/40 (100 %), 4 min 10 s");
  CHECK(support::progress_line("x", "y", 2, 40, 250.0) == "x: y 2/40 (5 %), 4 min 10 s, about 1 h 19 min left");
  CHECK(support::progress_line("x", "y", 2, 42, 250.0) == "x: y 2/42 (5 %), 4 min 10 s");
}

TEST_CASE("progress: shown only when enabled, rewritten in place, erased at the end", "[support][progress]") {
  std::ostringstream err;
  {
    support::ProgressOptions o;
    o.enabled = true;
    o.out = &err;
    o.delay = std::chrono::milliseconds(0);
    o.period = std::chrono::milliseconds(0);
    support::Progress p("ccsim test", o);
    p.update("counting", 1, 4);
    p.update("counting", 2, 4);
    CHECK(p.shown());
  }
  const std::string s = err.str();
  CHECK(s.rfind("\r\033[Kccsim test: counting 1/4 (25 %), 0 s", 0) == 0);
  CHECK(s.find("\r\033[Kccsim test: counting 2/4 (50 %), 0 s") != std::string::npos);
  CHECK(s.find('\n') == std::string::npos);  // never a new line: the terminal keeps nothing
  CHECK(s.size() >= 4);
  CHECK(s.substr(s.size() - 4) == "\r\033[K");  // erased by the destructor

  std::ostringstream quiet;
  {
    support::ProgressOptions o;
    o.enabled = false;
    o.out = &quiet;
    o.delay = std::chrono::milliseconds(0);
    support::Progress p("ccsim test", o);
    p.update("counting", 1, 4);
    CHECK_FALSE(p.shown());
  }
  CHECK(quiet.str().empty());

  // A delay longer than the work: nothing at all (a quick command stays silent).
  std::ostringstream quick;
  {
    support::ProgressOptions o;
    o.enabled = true;
    o.out = &quick;
    o.delay = std::chrono::hours(1);
    support::Progress p("ccsim test", o);
    p.update("counting", 1, 4);
  }
  CHECK(quick.str().empty());
}

TEST_CASE("progress: CCSIM_PROGRESS and --quiet decide whether it is shown", "[support][progress]") {
  const char* saved = std::getenv("CCSIM_PROGRESS");
  const std::string before = saved != nullptr ? saved : "";
  ::setenv("CCSIM_PROGRESS", "1", 1);
  CHECK(support::progress_enabled());
  CHECK(support::ProgressOptions::default_delay() == std::chrono::milliseconds(0));
  support::set_progress_quiet(true);
  CHECK_FALSE(support::progress_enabled());
  support::set_progress_quiet(false);
  ::setenv("CCSIM_PROGRESS", "0", 1);
  CHECK_FALSE(support::progress_enabled());
  CHECK(support::ProgressOptions::default_delay() == std::chrono::milliseconds(500));
  if (saved != nullptr) ::setenv("CCSIM_PROGRESS", before.c_str(), 1);
  else ::unsetenv("CCSIM_PROGRESS");
}

TEST_CASE("progress: updates from worker threads leave whole lines", "[support][progress]") {
  // 8 threads update at once, 4,000 times in all: every segment between two "\r\033[K" is one
  // whole line of the expected form (a mutex orders the writes), and the last one before the
  // erase counts all 4,000.
  std::ostringstream err;
  {
    support::ProgressOptions o;
    o.enabled = true;
    o.out = &err;
    o.delay = std::chrono::milliseconds(0);
    o.period = std::chrono::milliseconds(0);
    support::Progress p("ccsim test", o);
    std::atomic<std::size_t> done{0};
    support::ParallelOptions po;
    po.threads = 8;
    support::parallel_for(4000, po, [&](std::size_t) { p.update("items", ++done, 4000); });
    p.update("items", 4000, 4000);
  }
  const std::string s = err.str();
  const std::regex line(R"(ccsim test: items \d+/4000 \(\d+ %\), \d+ s(, about \d+ s left)?)");
  std::size_t segments = 0;
  std::size_t pos = 0;
  std::string last;
  while ((pos = s.find("\r\033[K", pos)) != std::string::npos) {
    pos += 4;
    const std::size_t next = s.find("\r\033[K", pos);
    const std::string seg = s.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    if (!seg.empty()) {
      CHECK(std::regex_match(seg, line));
      last = seg;
      ++segments;
    }
  }
  CHECK(segments >= 1);
  CHECK(last.rfind("ccsim test: items 4000/4000 (100 %)", 0) == 0);
}
