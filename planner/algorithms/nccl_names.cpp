#include "planner/algorithms/nccl_names.hpp"

#include <algorithm>
#include <cctype>

namespace ccsim::planner {

namespace {

bool same_text(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t from = 0;
  for (std::size_t at; (at = s.find(sep, from)) != std::string_view::npos; from = at + 1) out.push_back(s.substr(from, at - from));
  out.push_back(s.substr(from));
  return out;
}

/// NCCL's function names, the prefixes of an entry (ncclFuncStr, NCCL_NUM_FUNCTIONS of them).
struct FunctionName {
  std::string_view name;
  models::Collective collective;
};
constexpr FunctionName kFunctions[] = {{"Broadcast", models::Collective::Broadcast},
                                       {"Reduce", models::Collective::Reduce},
                                       {"AllGather", models::Collective::AllGather},
                                       {"ReduceScatter", models::Collective::ReduceScatter},
                                       {"AllReduce", models::Collective::AllReduce}};

/// The list that applies to `collective`: whether it excludes, and its elements (empty ones
/// skipped); nullopt when no entry applies. `variable` names the setting in messages.
struct AppliedList {
  bool exclude = false;
  std::vector<std::string_view> elements;
};

std::optional<AppliedList> applied_list(std::string_view text, models::Collective collective, std::string_view variable) {
  const std::string where = std::string(variable) + " '" + std::string(text) + "'";
  if (text.empty()) throw std::invalid_argument(where + ": an empty value");
  std::optional<AppliedList> out;
  bool first = true;
  for (std::string_view entry : split(text, ';')) {
    if (entry.empty()) continue;  // strtok skips empty entries
    std::string_view prefix;
    std::string_view list = entry;
    if (const std::size_t colon = entry.find(':'); colon != std::string_view::npos) {
      prefix = entry.substr(0, colon);
      list = entry.substr(colon + 1);
      if (list.find(':') != std::string_view::npos) throw std::invalid_argument(where + ": more than one ':' in '" + std::string(entry) + "'");
    } else if (!first) {
      // NCCL: "All entries except the first must have a prefix".
      throw std::invalid_argument(where + ": every entry after the first needs a function prefix (allreduce:...), found '" + std::string(entry) + "'");
    }
    first = false;
    bool applies = prefix.empty();
    if (!prefix.empty()) {
      const auto f = std::find_if(std::begin(kFunctions), std::end(kFunctions), [&](const FunctionName& n) { return same_text(n.name, prefix); });
      if (f == std::end(kFunctions)) {
        throw std::invalid_argument(where + ": unknown function prefix '" + std::string(prefix) +
                                    "' (NCCL's: Broadcast, Reduce, AllGather, ReduceScatter, AllReduce)");
      }
      applies = f->collective == collective;
    }
    AppliedList l;
    if (!list.empty() && list.front() == '^') {
      l.exclude = true;
      list.remove_prefix(1);
    }
    for (std::string_view e : split(list, ','))
      if (!e.empty()) l.elements.push_back(e);
    // A later entry replaces the list of its function. An unprefixed list applies to NCCL's
    // five functions only: AlltoAll and SendRecv are point-to-point.
    if (applies) out = std::move(l);
  }
  const bool nccl_function =
      std::any_of(std::begin(kFunctions), std::end(kFunctions), [&](const FunctionName& n) { return n.collective == collective; });
  if (!nccl_function) return std::nullopt;
  return out;
}

/// Every element of every entry of `text` (to check names that apply to other functions too).
std::vector<std::string_view> all_elements(std::string_view text) {
  std::vector<std::string_view> out;
  for (std::string_view entry : split(text, ';')) {
    if (const std::size_t colon = entry.find(':'); colon != std::string_view::npos) entry = entry.substr(colon + 1);
    if (!entry.empty() && entry.front() == '^') entry.remove_prefix(1);
    for (std::string_view e : split(entry, ','))
      if (!e.empty()) out.push_back(e);
  }
  return out;
}

bool is_collnet(std::string_view e) { return same_text(e, "CollNetDirect") || same_text(e, "CollNetChain"); }

std::string algorithm_names_help() {
  std::string s = "NCCL's Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT, or ccsim's";
  for (std::string_view n : algorithm_names()) s += " " + std::string(n);
  return s;
}

}  // namespace

bool is_nccl_list(std::string_view text) {
  if (text.rfind("synth:", 0) == 0) return false;
  return text.find_first_of(",^;:") != std::string_view::npos;
}

std::vector<Algorithm> AlgorithmFilter::apply(const std::vector<Algorithm>& nccl_eligible, models::Collective collective) const {
  const auto is_named = [&](Algorithm a) { return std::find(named.begin(), named.end(), a) != named.end(); };
  std::vector<Algorithm> out;
  for (Algorithm a : nccl_eligible)
    if (is_named(a) != exclude) out.push_back(a);
  if (exclude) return out;
  for (Algorithm a : all_algorithms())
    if (is_named(a) && !algorithm_entry(a).nccl_collectives.contains(collective)) out.push_back(a);
  return out;
}

std::optional<AlgorithmFilter> parse_nccl_algo(std::string_view text, models::Collective collective) {
  const std::string where = "NCCL_ALGO '" + std::string(text) + "'";
  // Every name is checked, also those of entries for other functions, as NCCL checks them.
  for (std::string_view e : all_elements(text)) {
    if (!is_collnet(e) && !parse_algorithm(e)) {
      throw std::invalid_argument(where + ": unknown algorithm '" + std::string(e) + "' (" + algorithm_names_help() + ")");
    }
  }
  const std::optional<AppliedList> list = applied_list(text, collective, "NCCL_ALGO");
  if (!list) return std::nullopt;
  AlgorithmFilter f;
  f.exclude = list->exclude;
  for (std::string_view e : list->elements) {
    if (is_collnet(e)) {
      f.collnet = true;
      continue;
    }
    const Algorithm a = *parse_algorithm(e);
    if (std::find(f.named.begin(), f.named.end(), a) == f.named.end()) f.named.push_back(a);
  }
  return f;
}

std::optional<EnumSet<Protocol>> parse_nccl_proto(std::string_view text, models::Collective collective) {
  const std::string where = "NCCL_PROTO '" + std::string(text) + "'";
  for (std::string_view e : all_elements(text)) {
    if (!parse_protocol(e)) throw std::invalid_argument(where + ": unknown protocol '" + std::string(e) + "' (LL, LL128, Simple)");
  }
  const std::optional<AppliedList> list = applied_list(text, collective, "NCCL_PROTO");
  if (!list) return std::nullopt;
  EnumSet<Protocol> set;
  if (list->exclude) set = {Protocol::LL, Protocol::LL128, Protocol::Simple};
  for (std::string_view e : list->elements) {
    if (list->exclude) {
      set.erase(*parse_protocol(e));
    } else {
      set.insert(*parse_protocol(e));
    }
  }
  return set;
}

std::string to_string(const EnumSet<Protocol>& set) {
  std::string s;
  for (Protocol p : {Protocol::LL, Protocol::LL128, Protocol::Simple})
    if (set.contains(p)) s += (s.empty() ? "" : ", ") + std::string(to_string(p));
  return s;
}

}  // namespace ccsim::planner
