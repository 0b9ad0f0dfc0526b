#include "models/hardware/import/hostfile.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "support/input_file.hpp"
#include "support/numbers.hpp"

namespace ccsim::models::import {
namespace {

using support::InputError;

constexpr std::size_t kMaxHosts = std::size_t{1} << 20;
constexpr int kMaxSlots = 4096;

bool valid_host_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_'; }

}  // namespace

std::vector<std::string> expand_nodelist(const std::string& text, const support::SourceLocation& where) {
  const auto fail = [&](std::size_t column, const std::string& expected, const std::string& found) {
    support::SourceLocation at = where;
    at.column = where.column + static_cast<int>(column);
    throw InputError(at, "nodelist", expected, found);
  };
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < text.size()) {
    // One item: a prefix, then optional [ranges], then an optional suffix; items split on ','.
    std::string prefix;
    while (i < text.size() && text[i] != ',' && text[i] != '[') {
      if (!valid_host_char(text[i])) fail(i, "a host name character (letters, digits, '-', '.', '_') or '[' or ','", support::quote_token(std::string(1, text[i])));
      prefix.push_back(text[i++]);
    }
    std::vector<std::string> expanded{prefix};
    if (i < text.size() && text[i] == '[') {
      const std::size_t open = i++;
      const std::size_t close = text.find(']', i);
      if (close == std::string::npos) fail(open, "a ']' closing the range list", "none");
      const std::string body = text.substr(i, close - i);
      if (body.find('[') != std::string::npos) fail(open, "no nested '['", support::quote_token(body));
      std::vector<std::string> numbers;
      std::size_t k = 0;
      while (k <= body.size()) {
        std::size_t end = body.find(',', k);
        if (end == std::string::npos) end = body.size();
        const std::string part = body.substr(k, end - k);
        const std::size_t dash = part.find('-');
        const std::string lo = part.substr(0, dash), hi = dash == std::string::npos ? lo : part.substr(dash + 1);
        const support::Parsed<std::int64_t> a = support::parse_integer(lo), b = support::parse_integer(hi);
        const bool digits = !lo.empty() && !hi.empty() && lo.find_first_not_of("0123456789") == std::string::npos &&
                            hi.find_first_not_of("0123456789") == std::string::npos;
        if (!digits || !a || !b || a.value > b.value) fail(open + 1 + k, "a number or a range such as 001-016", support::quote_token(part));
        if (static_cast<std::size_t>(b.value - a.value) + out.size() >= kMaxHosts) fail(open + 1 + k, "at most 1048576 hosts", "more");
        for (std::int64_t v = a.value; v <= b.value; ++v) numbers.push_back(fmt::format("{:0>{}}", v, lo.size()));
        k = end + 1;
      }
      expanded.clear();
      for (const std::string& n : numbers) expanded.push_back(prefix + n);
      i = close + 1;
      std::string suffix;
      while (i < text.size() && text[i] != ',') {
        if (!valid_host_char(text[i])) fail(i, "a host name character or ','", support::quote_token(std::string(1, text[i])));
        suffix.push_back(text[i++]);
      }
      for (std::string& e : expanded) e += suffix;
    }
    if (expanded.size() == 1 && expanded.front().empty()) fail(i, "a host name", "an empty item");
    for (std::string& e : expanded) out.push_back(std::move(e));
    if (out.size() > kMaxHosts) fail(i, "at most 1048576 hosts", "more");
    if (i < text.size()) ++i;  // the ','
    if (i == text.size() && !text.empty() && text.back() == ',') fail(i - 1, "a host name after ','", "none");
  }
  if (out.empty()) fail(0, "a Slurm nodelist such as gpu[001-016]", "an empty text");
  std::set<std::string> seen;
  for (const std::string& h : out)
    if (!seen.insert(h).second) fail(0, "each host once", fmt::format("{} twice", h));
  return out;
}

HostList parse_hostfile(const std::string& text, const std::string& file) {
  HostList list;
  std::map<std::string, std::size_t> index;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  std::vector<bool> counted_by_lines;  // the host's first line stated no slots
  while (std::getline(in, line)) {
    ++number;
    if (const std::size_t hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::string host;
    if (!(words >> host)) continue;
    const int column = static_cast<int>(line.find(host)) + 1;
    int slots = 0;
    if (const std::size_t colon = host.find(':'); colon != std::string::npos) {  // MPICH host:N
      const support::Parsed<std::int64_t> n = support::parse_integer(host.substr(colon + 1));
      if (!n || n.value < 1 || n.value > kMaxSlots) {
        throw InputError({file, number, column + static_cast<int>(colon) + 1}, "slots", fmt::format("a slot count from 1 to {} after ':'", kMaxSlots),
                         support::quote_token(host.substr(colon + 1)));
      }
      slots = static_cast<int>(n.value);
      host.erase(colon);
    }
    for (char c : host) {
      if (!valid_host_char(c)) {
        throw InputError({file, number, column}, "host", "a host name (letters, digits, '-', '.', '_')", support::quote_token(host));
      }
    }
    std::string word;
    while (words >> word) {
      const std::size_t eq = word.find('=');
      const std::string key = word.substr(0, eq);
      if (eq == std::string::npos || (key != "slots" && key != "max_slots" && key != "max-slots")) {
        throw InputError({file, number, static_cast<int>(line.find(word)) + 1}, "hostfile",
                         "'slots=N' or 'max_slots=N' after the host name (OpenMPI, DeepSpeed)", support::quote_token(word));
      }
      const support::Parsed<std::int64_t> n = support::parse_integer(word.substr(eq + 1));
      if (!n || n.value < 1 || n.value > kMaxSlots) {
        throw InputError({file, number, static_cast<int>(line.find(word)) + 1}, key, fmt::format("a slot count from 1 to {}", kMaxSlots),
                         support::quote_token(word.substr(eq + 1)));
      }
      if (key == "slots") slots = static_cast<int>(n.value);
    }
    const auto [it, fresh] = index.emplace(host, list.hosts.size());
    if (fresh) {
      if (list.hosts.size() >= kMaxHosts) throw InputError({file, number, column}, "host", "at most 1048576 hosts", "more");
      list.hosts.push_back(host);
      list.slots.push_back(slots);
      counted_by_lines.push_back(slots == 0);
    } else if (slots == 0 && counted_by_lines[it->second]) {
      // PBS_NODEFILE: one line per slot.
      list.slots[it->second] = std::max(list.slots[it->second], 1) + 1;
    } else {
      throw InputError({file, number, column}, "host", "each host once (or once per slot, without slots=)", fmt::format("{} again", host));
    }
  }
  if (list.hosts.empty()) throw InputError({file, 1, 1}, "hostfile", "at least one host", "none");
  return list;
}

HostList read_hostfile(const std::string& path) {
  return parse_hostfile(support::read_input_file(path, {"a hostfile (MPI, DeepSpeed) or a Slurm nodelist"}), path);
}

}  // namespace ccsim::models::import
