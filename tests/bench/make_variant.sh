#!/usr/bin/env bash
# Writes a fabric variant of a scenario for the scaling benchmark (tests/bench/scaling.sh): the
# same nodes, workload and strategy, another fat-tree fabric.
#
# Usage: make_variant.sh IN.yaml OUT.yaml VARIANT [section.key=value ...]
#   VARIANT  rail   the fabric as shipped (a copy; overrides still apply)
#            tor    ToR wiring: kind fat-tree, wiring tor, nodes_per_leaf 2, non-blocking
#            2to1   the shipped fabric with oversubscription 2 (2:1 leaf down/up bandwidth)
#            3tier  the fabric keys of scenarios/h100-24k-3tier.yaml: ToR wiring, 2 nodes per
#                   leaf, non-blocking pods of nodes_per_pod nodes, pod_oversubscription 7;
#                   nodes_per_pod is 384 as there when the cluster has more than 768 nodes,
#                   else the largest even count up to half the nodes (two pods or more: a
#                   single pod has no core tier and the scenario reader refuses it)
#   section.key=value  replaces (or adds) a scalar key of a top-level section (strategy.dp=4,
#                   workload.global_batch_size=64), or the node count of a one-group cluster
#                   (nodes.count=16)
# The input must use the shipped files' layout: top-level sections at column 0, keys indented
# by two spaces, `fabric:` inside `cluster:`. Exit 2 with a message when a variant does not
# apply (no fabric; a single-switch fabric for anything but rail; 3tier on fewer than 4 nodes).
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 IN.yaml OUT.yaml rail|tor|2to1|3tier [section.key=value ...]" >&2
  exit 2
fi
in=$1 out=$2 variant=$3
shift 3
case $variant in rail|tor|2to1|3tier) ;; *) echo "$0: VARIANT: expected rail, tor, 2to1 or 3tier, found '$variant'" >&2; exit 2;; esac
overrides=""
for kv in "$@"; do
  case $kv in *.*=*) overrides="$overrides$kv"$'\n' ;; *) echo "$0: expected section.key=value, found '$kv'" >&2; exit 2;; esac
done
awk -v variant="$variant" -v overrides="$overrides" -v file="$in" '
function flush_overrides(sec,   k) {
  # keys of this section not present in the input: appended at its end
  for (k in ov) if (index(k, sec ".") == 1 && !(k in done)) { print "  " substr(k, length(sec) + 2) ": " ov[k]; done[k] = 1 }
}
function emit_fabric(   p) {
  if (variant != "rail" && fabric_kind != "fat-tree") { print file ": error: variant " variant " needs a fat-tree fabric, found " fabric_kind > "/dev/stderr"; failed = 1; exit 2 }
  print "  fabric:"
  if (variant == "tor" || variant == "3tier") {
    print "    kind: fat-tree"
    print "    wiring: tor"
    print "    nodes_per_leaf: 2"
    print "    oversubscription: 1"
    if (variant == "3tier") {
      if (nodes > 768) p = 384
      else p = int(nodes / 4) * 2
      if (p < 2) { print file ": error: 3tier needs at least 4 nodes (two pods of whole 2-node leaves), found " nodes > "/dev/stderr"; failed = 1; exit 2 }
      print "    nodes_per_pod: " p
      print "    pod_oversubscription: 7"
    }
  } else {
    for (i = 1; i <= nfab; ++i) {
      if (variant == "2to1" && fab[i] ~ /^    oversubscription:/) continue
      print fab[i]
    }
    if (variant == "2to1") print "    oversubscription: 2"
  }
}
BEGIN {
  n = split(overrides, list, "\n")
  for (i = 1; i <= n; ++i) if (list[i] != "") {
    eq = index(list[i], "="); ov[substr(list[i], 1, eq - 1)] = substr(list[i], eq + 1)
  }
  section = ""; in_fabric = 0; nfab = 0; nodes = 0; had_fabric = 0
}
{
  line = $0
  if (line ~ /^[A-Za-z_]+:/) {               # a top-level section starts
    if (in_fabric) { emit_fabric(); in_fabric = 0 }
    if (section != "") flush_overrides(section)
    section = line; sub(/:.*/, "", section)
    print line; next
  }
  if (in_fabric) {
    if (line ~ /^    / || line ~ /^[ \t]*(#.*)?$/) {
      if (line ~ /^    kind:/) { fabric_kind = line; sub(/^    kind:[ ]*/, "", fabric_kind); sub(/[ ]*#.*/, "", fabric_kind) }
      if (line ~ /^    [a-z_]+:/) fab[++nfab] = line
      next
    }
    emit_fabric(); in_fabric = 0
  }
  if (section == "cluster" && line ~ /^  fabric:/) { in_fabric = 1; had_fabric = 1; next }
  if (section == "cluster" && line ~ /^ +count:/) {
    c = line; sub(/^ +count:[ ]*/, "", c); sub(/[ ]*#.*/, "", c)
    if ("nodes.count" in ov) { c = ov["nodes.count"]; done["nodes.count"] = 1; line = substr(line, 1, index(line, "count:") - 1) "count: " c }
    nodes += c
  }
  if (section != "" && line ~ /^  [a-z_]+:/) {
    k = line; sub(/^  /, "", k); sub(/:.*/, "", k)
    if ((section "." k) in ov) { print "  " k ": " ov[section "." k]; done[section "." k] = 1; next }
  }
  print line
}
END {
  if (failed) exit 2
  if (in_fabric) emit_fabric()
  if (section != "") flush_overrides(section)
  if (!had_fabric) { print file ": error: no cluster.fabric section to vary" > "/dev/stderr"; exit 2 }
  for (k in ov) if (!(k in done)) { print file ": error: override " k ": no such section in the scenario" > "/dev/stderr"; exit 2 }
}' "$in" >"$out"
