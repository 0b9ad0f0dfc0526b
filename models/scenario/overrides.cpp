#include "models/scenario/overrides.hpp"

#include <cctype>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "models/scenario/scenario_layers.hpp"

namespace ccsim::models {

namespace {

const support::SourceLocation kCommandLine{"<command line>", 0, 0};

support::InputError set_error(const std::string& key, const std::string& expected, const std::string& found,
                              const std::string& hint = {}) {
  return support::InputError(kCommandLine, "--set " + key, expected, found, hint);
}

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

/// `map[key]` without inserting it (an undefined node when absent or when `map` is no map).
YAML::Node child(const YAML::Node& map, const std::string& key) {
  if (!map.IsDefined() || !map.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  const YAML::Node& c = map;
  for (const auto& kv : c) {
    if (kv.first.IsScalar() && kv.first.Scalar() == key) return kv.second;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

std::string items(std::size_t n) { return fmt::format("{} item{}", n, n == 1 ? "" : "s"); }

/// A catalog name met on the way down becomes {base: NAME}.
YAML::Node as_base_map(const YAML::Node& scalar) {
  YAML::Node m(YAML::NodeType::Map);
  m["base"] = scalar.Scalar();
  return m;
}

/// Descends `segments` inside `node` (a subtree this layer owns, a copy) and sets or removes the
/// last one. `where` is the key path of `node`.
void set_inside(YAML::Node node, const std::vector<KeySegment>& segments, std::size_t from, const Assignment& a,
                std::string where) {
  YAML::Node cur;
  cur.reset(node);
  for (std::size_t i = from; i < segments.size(); ++i) {
    const KeySegment& seg = segments[i];
    const bool last = i + 1 == segments.size();
    if (cur.IsScalar() || cur.IsNull()) {
      throw set_error(a.key, "a key path through maps and lists of the scenario",
                      fmt::format("{} holding a {}", where.empty() ? std::string("the document") : where,
                                  cur.IsScalar() ? "value" : "null"));
    }
    if (!cur.IsMap()) {
      throw set_error(a.key, fmt::format("an index after {} (a list of {})", where, items(cur.size())), in_quotes(seg.name));
    }
    const std::string path = where.empty() ? seg.name : where + "." + seg.name;
    YAML::Node next = child(cur, seg.name);
    if (last && !seg.indexed) {
      if (a.value == kUnsetValue) {
        cur.remove(seg.name);
      } else {
        cur[seg.name] = a.value;
      }
      return;
    }
    if (!seg.indexed && next.IsSequence()) {
      throw set_error(a.key, fmt::format("an index after {} (a list of {}): {}[0]", path, items(next.size()), path),
                      in_quotes(seg.name));
    }
    if (seg.indexed) {
      if (!next.IsSequence()) {
        throw set_error(a.key, fmt::format("a list at {}", path),
                        next.IsDefined() ? (next.IsMap() ? "a map" : "a value") : std::string("no such key"));
      }
      if (seg.index >= next.size()) {
        throw set_error(a.key, fmt::format("an index below {} (the list {} has {})", next.size(), path, items(next.size())),
                        std::to_string(seg.index));
      }
      const std::string elem = fmt::format("{}[{}]", path, seg.index);
      if (last) {
        if (a.value == kUnsetValue) {
          throw set_error(a.key, "a value (a list element cannot be removed with auto)", in_quotes(a.value));
        }
        next[seg.index] = a.value;
        return;
      }
      YAML::Node e = next[seg.index];
      if (e.IsScalar()) {
        next[seg.index] = as_base_map(e);
        e.reset(next[seg.index]);
      }
      cur.reset(e);
      where = elem;
      continue;
    }
    if (next.IsScalar()) {
      cur[seg.name] = as_base_map(next);
    } else if (!next.IsDefined() || next.IsNull()) {
      cur[seg.name] = YAML::Node(YAML::NodeType::Map);
    }
    YAML::Node n = cur[seg.name];
    cur.reset(n);
    where = path;
  }
}

/// True when `layer` holds the map path `segments` (no indices).
bool holds(const YAML::Node& layer, const std::vector<KeySegment>& segments) {
  YAML::Node cur;
  cur.reset(layer);
  for (const KeySegment& seg : segments) {
    YAML::Node next = child(cur, seg.name);
    if (!next.IsDefined()) return false;
    cur.reset(next);
  }
  return true;
}

void remove_path(YAML::Node layer, const std::vector<KeySegment>& segments) {
  YAML::Node cur;
  cur.reset(layer);
  for (std::size_t i = 0; i + 1 < segments.size(); ++i) {
    YAML::Node next = child(cur, segments[i].name);
    if (!next.IsDefined() || !next.IsMap()) return;
    cur.reset(next);
  }
  cur.remove(segments.back().name);
}

}  // namespace

std::vector<KeySegment> parse_key_path(const std::string& key) {
  const std::string expected = "a key path such as strategy.tp or cluster.nodes[0].count (map keys joined by '.', list indices in brackets)";
  if (key.empty()) throw set_error(key, expected, "an empty key");
  std::vector<KeySegment> out;
  std::size_t i = 0;
  while (i <= key.size()) {
    const std::size_t dot = key.find('.', i);
    const std::string part = key.substr(i, dot == std::string::npos ? std::string::npos : dot - i);
    KeySegment seg;
    const std::size_t open = part.find('[');
    seg.name = part.substr(0, open);
    if (seg.name.empty() || seg.name.find(']') != std::string::npos) throw set_error(key, expected, in_quotes(key));
    if (open != std::string::npos) {
      const std::size_t close = part.find(']', open);
      const std::string digits = part.substr(open + 1, close == std::string::npos ? std::string::npos : close - open - 1);
      bool ok = close == part.size() - 1 && !digits.empty() && digits.size() <= 6;
      for (char c : digits) ok = ok && std::isdigit(static_cast<unsigned char>(c));
      if (!ok) throw set_error(key, expected + "; an index is a number in brackets at the end of a segment", in_quotes(key));
      seg.indexed = true;
      seg.index = static_cast<std::size_t>(std::stoul(digits));
    }
    out.push_back(seg);
    if (dot == std::string::npos) break;
    i = dot + 1;
  }
  return out;
}

SweepAxis parse_set_option(const std::string& text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos) {
    throw support::InputError(kCommandLine, "--set", "KEY=V1,V2,... (a key path, '=', comma-separated values)", in_quotes(text));
  }
  SweepAxis axis;
  axis.key = text.substr(0, eq);
  parse_key_path(axis.key);
  const std::string values = text.substr(eq + 1);
  std::set<std::string> seen;
  std::size_t i = 0;
  while (true) {
    const std::size_t comma = values.find(',', i);
    std::string v = values.substr(i, comma == std::string::npos ? std::string::npos : comma - i);
    if (v.empty()) throw set_error(axis.key, "a non-empty value between commas", in_quotes(values));
    if (!seen.insert(v).second) throw set_error(axis.key, "each value once", fmt::format("{} twice", in_quotes(v)));
    axis.values.push_back(std::move(v));
    if (comma == std::string::npos) break;
    i = comma + 1;
  }
  return axis;
}

std::size_t grid_size(const std::vector<SweepAxis>& axes, std::size_t max_points) {
  std::size_t n = 1;
  for (const auto& a : axes) {
    if (a.values.empty() || n > max_points / a.values.size()) {
      throw support::InputError(kCommandLine, "--set", fmt::format("a grid of at most {} points", max_points),
                                "more (the product of the value counts)");
    }
    n *= a.values.size();
  }
  return n;
}

std::vector<std::size_t> grid_point(const std::vector<SweepAxis>& axes, std::size_t point) {
  std::vector<std::size_t> idx(axes.size());
  for (std::size_t k = axes.size(); k-- > 0;) {
    idx[k] = point % axes[k].values.size();
    point /= axes[k].values.size();
  }
  return idx;
}

std::vector<support::YamlSource> point_layers(const std::vector<support::YamlSource>& base,
                                              const std::vector<Assignment>& assignments) {
  YAML::Node merged(YAML::NodeType::Map);
  for (auto it = base.rbegin(); it != base.rend(); ++it) merged = merge_layers(merged, it->node);

  YAML::Node over(YAML::NodeType::Map);
  std::vector<std::vector<KeySegment>> removed;  // map paths taken out of the base layers
  for (const Assignment& a : assignments) {
    const std::vector<KeySegment> segments = parse_key_path(a.key);
    // Outside lists the layer holds only the keys set; the first list or catalog name on the
    // way down is copied whole from the merged base and changed there.
    YAML::Node o;
    o.reset(over);
    YAML::Node m;
    m.reset(merged);
    std::string where;
    for (std::size_t i = 0; i < segments.size(); ++i) {
      const KeySegment& seg = segments[i];
      const bool last = i + 1 == segments.size();
      const std::string path = where.empty() ? seg.name : where + "." + seg.name;
      const YAML::Node mc = child(m, seg.name);
      const YAML::Node oc = child(o, seg.name);
      const std::vector<KeySegment> prefix(segments.begin(), segments.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      if (m.IsDefined() && !m.IsMap() && !m.IsNull()) {
        throw set_error(a.key, "a key path through maps and lists of the scenario",
                        fmt::format("{} holding a {}", where, m.IsSequence() ? "list" : "value"));
      }
      if (last && !seg.indexed) {
        if (a.value == kUnsetValue) {
          o.remove(seg.name);
          removed.push_back(prefix);
        } else {
          o[seg.name] = a.value;
        }
        break;
      }
      if (seg.indexed || mc.IsSequence() || mc.IsScalar()) {
        // Copy the subtree whole into this layer (once), then set inside the copy.
        if (!oc.IsDefined()) {
          if (mc.IsSequence() || mc.IsScalar()) {
            o[seg.name] = mc.IsScalar() ? as_base_map(mc) : YAML::Clone(mc);
            removed.push_back(prefix);  // the copy replaces the base's value in every layer
          } else if (seg.indexed) {
            throw set_error(a.key, fmt::format("a list at {}", path), mc.IsDefined() ? "a map" : "no such key");
          }
        }
        YAML::Node holder(YAML::NodeType::Map);
        holder.reset(o);
        set_inside(holder, segments, i, a, where);
        break;
      }
      if (!oc.IsDefined()) o[seg.name] = YAML::Node(YAML::NodeType::Map);
      YAML::Node next = o[seg.name];
      o.reset(next);
      m.reset(mc);
      where = path;
    }
  }

  std::vector<support::YamlSource> layers;
  layers.push_back({over, std::make_shared<const std::string>(kSetLayerFile)});
  for (const support::YamlSource& layer : base) {
    bool touched = false;
    for (const auto& r : removed) touched = touched || holds(layer.node, r);
    if (!touched) {
      layers.push_back(layer);
      continue;
    }
    YAML::Node copy = YAML::Clone(layer.node);
    for (const auto& r : removed) remove_path(copy, r);
    layers.push_back({copy, layer.file});
  }
  return layers;
}

}  // namespace ccsim::models
