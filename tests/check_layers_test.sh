#!/usr/bin/env bash
# scripts/check-layers on the source tree (must pass), then on a copy of the room map over a
# small tree with upward includes ("...", <...>, ../), an include across rooms the map does not
# list and files in no room (each must be reported, exit 1; includes in comments and #if 0
# blocks must not be), then with a map that names no room or another layer's, and none.
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
printf '#include <cli/options.hpp>\n' > "$work/sim/analytic/angle.hpp"
printf '#include "../../planner/tuning/cost_model.hpp"\n' > "$work/sim/analytic/relative.hpp"
printf '/* #include "cli/options.hpp"\n#include "cli/options.hpp" */\n#if 0\n#include "cli/options.hpp"\n#endif\n#include <fmt/format.h>\n' > "$work/sim/analytic/quiet.hpp"
: > "$work/models/nowhere/empty.hpp"
out=$("$work/scripts/check-layers" "$work"); rc=$?
echo "$out"
[ $rc -eq 1 ] || { echo "FAIL: expected exit 1, got $rc"; exit 1; }
for want in "models/hardware/up.hpp:1: error: includes planner/tuning/cost_model.hpp: layer planner is above models" \
            "sim/analytic/across.hpp:1: error: includes sim/flow/flow_plugin.hpp: room sim/analytic may not use room sim/flow" \
            "models/nowhere/stray.hpp: error: in no room of scripts/rooms.txt" \
            "models/nowhere/empty.hpp: error: in no room of scripts/rooms.txt" \
            "sim/analytic/angle.hpp:1: error: includes cli/options.hpp: layer cli is above sim" \
            "sim/analytic/relative.hpp:1: error: includes planner/tuning/cost_model.hpp: layer planner is above sim"; do
  grep -qF "$want" <<<"$out" || { echo "FAIL: missing '$want'"; exit 1; }
done
if grep -q "ok.hpp\|quiet.hpp" <<<"$out"; then echo "FAIL: a downward, commented-out or #if 0 include was reported"; exit 1; fi
# A map whose uses name no room, or a room of another layer, is refused; so is a missing map.
sed -i 's|^sim/flow .*|sim/flow             sim/execution sim/bogus planner/tuning|' "$work/scripts/rooms.txt"
out=$("$work/scripts/check-layers" "$work" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "sim/flow uses sim/bogus, which is no room of the map" <<<"$out" &&
  grep -q "sim/flow lists planner/tuning, a room of another layer" <<<"$out" || { echo "FAIL: bad map accepted: $out"; exit 1; }
rm "$work/scripts/rooms.txt"
out=$("$work/scripts/check-layers" "$work" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "expected the room map" <<<"$out" || { echo "FAIL: missing map: rc $rc, $out"; exit 1; }
echo PASS
