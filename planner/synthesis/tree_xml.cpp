#include "planner/synthesis/tree_xml.hpp"

#include <fmt/format.h>
#include <map>
#include <pugixml.hpp>
#include <sstream>

namespace ccsim::planner::synthesis {

std::string to_tree_xml(const Forest& f, const SynthesisGraph& g, const std::string& collective) {
  pugi::xml_document doc;
  pugi::xml_node top = doc.append_child("trees");
  top.append_attribute("collective") = collective.c_str();
  top.append_attribute("ranks") = f.ranks;
  top.append_attribute("k") = static_cast<long long>(f.weight_per_root);
  top.append_attribute("rate_GBps") = fmt::format("{:.6g}", f.rate() / 1e9).c_str();
  top.append_attribute("algbw_GBps") = fmt::format("{:.6g}", f.rate() * f.ranks / 1e9).c_str();
  std::map<int, int> index;
  for (const Tree& t : f.trees) {
    pugi::xml_node tree = top.append_child("tree");
    tree.append_attribute("root") = g.name[static_cast<std::size_t>(t.root)].c_str();
    tree.append_attribute("index") = index[t.root]++;
    tree.append_attribute("nchunks") = static_cast<long long>(t.weight);
    tree.append_attribute("height") = t.height();
    for (const TreeEdge& e : t.edges) {
      pugi::xml_node send = tree.append_child("send");
      send.append_attribute("src") = g.name[static_cast<std::size_t>(e.parent)].c_str();
      send.append_attribute("dst") = g.name[static_cast<std::size_t>(e.child)].c_str();
      std::string path = g.name[static_cast<std::size_t>(e.parent)];
      for (int v : e.via) path += "," + g.name[static_cast<std::size_t>(v)];
      path += "," + g.name[static_cast<std::size_t>(e.child)];
      send.append_attribute("path") = path.c_str();
    }
  }
  std::ostringstream out;
  doc.save(out, "  ", pugi::format_default, pugi::encoding_utf8);
  return out.str();
}

}  // namespace ccsim::planner::synthesis
