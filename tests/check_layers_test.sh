#!/usr/bin/env bash
# scripts/check-layers on the source tree (must pass), then on a copy of the room map over a
# small tree with one upward include, one include across rooms the map does not list and one
# file in no room (each must be reported, exit 1).
set -uo pipefail
src="$1"; work="$2"
"$src/scripts/check-layers" "$src" || { echo "FAIL: the source tree breaks the room map"; exit 1; }
rm -rf "$work"; mkdir -p "$work/scripts" "$work/support" "$work/models/hardware" "$work/sim/analytic" \
  "$work/sim/flow" "$work/planner/tuning" "$work/validate" "$work/cli" "$work/models/nowhere"
cp "$src/scripts/check-layers" "$src/scripts/rooms.txt" "$work/scripts/"
echo '#include "support/units.hpp"' > "$work/models/hardware/ok.hpp"
echo '#include "planner/tuning/cost_model.hpp"' > "$work/models/hardware/up.hpp"
echo '#include "sim/flow/flow_plugin.hpp"' > "$work/sim/analytic/across.hpp"
echo '#include "support/units.hpp"' > "$work/models/nowhere/stray.hpp"
out=$("$work/scripts/check-layers" "$work"); rc=$?
echo "$out"
[ $rc -eq 1 ] || { echo "FAIL: expected exit 1, got $rc"; exit 1; }
for want in "models/hardware/up.hpp:1: error: includes planner/tuning/cost_model.hpp: layer planner is above models" \
            "sim/analytic/across.hpp:1: error: includes sim/flow/flow_plugin.hpp: room sim/analytic may not use room sim/flow" \
            "models/nowhere/stray.hpp: error: in no room of scripts/rooms.txt"; do
  grep -qF "$want" <<<"$out" || { echo "FAIL: missing '$want'"; exit 1; }
done
if grep -q "ok.hpp" <<<"$out"; then echo "FAIL: a downward include was reported"; exit 1; fi
echo PASS
