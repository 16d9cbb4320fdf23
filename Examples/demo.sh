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
# The same drive from 08:01:00: on a replay, time is the log's, so what was remembered at
# 08:00:08 is 52 s old there (and a fix dated after the query is never reported).
later="$demo/from-0801.nmea"
sed -n '/^\$GPGGA,080100/,$p' "$log" > "$later"
echo "== logout defaults to force-last-known: the fix remembered in the state directory, 52 s old"
run trigger logout --replay "$later"
echo "== last-known:5m: a remembered fix at most 5 minutes old is reported without waiting"
run trigger login --replay "$later" --mode last-known:5m
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
