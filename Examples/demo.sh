#!/usr/bin/env bash
# demo.sh: what `make demo` runs. Replays the bundled drive log (8 s without a fix, then
# 120 s of fixes) through `geolocate trigger` in several collection modes, with a private
# state directory and configuration so nothing of yours is touched.
set -euo pipefail
cd "$(dirname "$0")/.."
geolocate=$(swift build --show-bin-path)/geolocate
demo=$(mktemp -d)
trap 'rm -rf "$demo"' EXIT
export GEOLOCATE_STATE_DIR="$demo/state" GEOLOCATE_CONFIG="$demo/config.json"
log=Examples/nmea/maynooth-drive.nmea

run() {
  echo
  echo "\$ geolocate $*"
  "$geolocate" "$@" || echo "(exit $?)"
}

echo "== a fresh install grants no permission: a record without a location (errorCode 1055)"
run trigger login --replay "$log"
echo
echo "== the one consent command"
run config set permissions fine
echo "== force-current, default 1.5 s timeout: the log starts with 8 s without a fix -> timeout, nothing known yet (1056)"
run trigger login --replay "$log"
echo "== force-current with a 10 s timeout: the first fix after the cold start"
run trigger login --replay "$log" --timeout 10s
echo "== the same timeout again: now falls back to the fix remembered in the state directory"
run trigger login --replay "$log"
echo "== logout defaults to force-last-known"
run trigger logout --replay "$log"
echo "== coarse permission for one call: snapped to a ~2 km cell"
run trigger transaction --replay "$log" --timeout 10s --permission coarse
echo "== the same event as a Veridium location object: coordinates, and country/district/city from the offline gazetteer"
run trigger login --replay "$log" --timeout 10s --format veridium
echo "== privacy.precision CITY: the address down to the city, no coordinates, in every format and in the spool"
run config set privacy.precision CITY
run trigger login --replay "$log" --timeout 10s
run config unset privacy.precision
echo "== track: a record for the first fix, then every 60 s or 300 m of the drive (NDJSON, nothing spooled)"
run track --replay "$log" --stdout --no-spool --interval 60s
