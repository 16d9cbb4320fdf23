#!/usr/bin/env bash
# login-hook.sh: deny a login unless a location is known, and log where it came from.
# Use from a PAM exec hook or a login script:   Examples/login-hook.sh || exit 1
# GEOLOCATE_SOURCE, GEOLOCATE_CONFIG and GEOLOCATE_STATE_DIR are honoured as usual;
# set GEOLOCATE_REPLAY to a log to try it without a receiver:
#   GEOLOCATE_REPLAY=Examples/nmea/kiosk-gnss.nmea Examples/login-hook.sh
set -uo pipefail
geolocate=${GEOLOCATE:-geolocate}
args=(trigger login --require-location)
[ -n "${GEOLOCATE_REPLAY:-}" ] && args+=(--replay "$GEOLOCATE_REPLAY")

record=$("$geolocate" "${args[@]}")
status=$?
if [ "$status" -ne 0 ]; then
  echo "login denied: no location (geolocate exit $status, errorCode $(jq -r '.errorCode // "n/a"' <<<"$record"))" >&2
  exit 1
fi
jq -r '"login at \(.location.latitude),\(.location.longitude) ±\(.location.accuracy // "?") m, \(.locationSource), \(.ageMs) ms old"' <<<"$record"
