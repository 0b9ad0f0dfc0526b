#include "support/progress.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <iostream>

#include <fmt/format.h>

namespace ccsim::support {

namespace {

std::atomic<bool> quiet{false};

/// CCSIM_PROGRESS: 1 forced on, 0 forced off, -1 not set (or another value).
int forced() {
  const char* v = std::getenv("CCSIM_PROGRESS");
  if (v == nullptr) return -1;
  const std::string_view s(v);
  if (s == "1") return 1;
  if (s == "0") return 0;
  return -1;
}

std::string duration_text(double s) {
  if (s < 100) return fmt::format("{:.0f} s", s);
  const auto whole = static_cast<long long>(s + 0.5);
  if (whole < 3600) return fmt::format("{} min {} s", whole / 60, whole % 60);
  return fmt::format("{} h {} min", whole / 3600, whole % 3600 / 60);
}

}  // namespace

bool progress_enabled() {
  if (quiet.load()) return false;
  const int f = forced();
  if (f >= 0) return f == 1;
  return ::isatty(2) != 0;
}

void set_progress_quiet(bool q) { quiet.store(q); }

std::chrono::milliseconds ProgressOptions::default_delay() {
  return forced() == 1 ? std::chrono::milliseconds(0) : std::chrono::milliseconds(500);
}

std::string progress_line(std::string_view label, std::string_view what, std::size_t done, std::size_t total, double elapsed_s) {
  std::string line = fmt::format("{}: {}", label, what);
  if (total > 0) {
    line += fmt::format(" {}/{} ({:.0f} %)", done, total, 100.0 * static_cast<double>(done) / static_cast<double>(total));
  } else if (done > 0) {
    line += fmt::format(" {}", done);
  }
  line += ", " + duration_text(elapsed_s);
  if (total > 0 && done > 0 && done < total && elapsed_s >= 2.0 && 20 * done >= total) {
    const double left = elapsed_s * static_cast<double>(total - done) / static_cast<double>(done);
    line += ", about " + duration_text(left) + " left";
  }
  return line;
}

Progress::Progress(std::string label, ProgressOptions options) : label_(std::move(label)), options_(options), start_(Clock::now()) {
  if (options_.enabled) ticker_ = std::thread([this] { tick(); });
}

Progress::~Progress() {
  if (ticker_.joinable()) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    ticker_.join();
  }
  finish();
}

void Progress::tick() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::seconds(1));
    if (stopping_) break;
    const auto now = Clock::now();
    if (has_state_ && now - start_ >= options_.delay) render(now);
  }
}

void Progress::render(Clock::time_point now) {
  last_write_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  std::ostream& out = options_.out != nullptr ? *options_.out : std::cerr;
  out << "\r\033[K" << progress_line(label_, last_what_, last_done_, last_total_, elapsed) << std::flush;
  visible_ = true;
  ever_shown_ = true;
}

void Progress::update(std::string_view what, std::size_t done, std::size_t total) {
  if (!options_.enabled) return;
  const auto now = Clock::now();
  const std::lock_guard<std::mutex> lock(mutex_);
  const bool changed = what != last_what_;
  if (changed) last_what_ = std::string(what);
  last_done_ = done;
  last_total_ = total;
  has_state_ = true;
  if (now - start_ < options_.delay) return;
  if (!changed && visible_ && now - last_write_ < options_.period && done != total) return;
  render(now);
}

std::function<void(std::size_t, std::size_t)> Progress::counter(std::string what) {
  return [this, what = std::move(what)](std::size_t done, std::size_t total) { update(what, done, total); };
}

void Progress::finish() {
  const std::lock_guard<std::mutex> lock(mutex_);
  has_state_ = false;
  last_what_.clear();
  if (!visible_) return;
  std::ostream& out = options_.out != nullptr ? *options_.out : std::cerr;
  out << "\r\033[K" << std::flush;
  visible_ = false;
}

bool Progress::shown() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return ever_shown_;
}

}  // namespace ccsim::support
