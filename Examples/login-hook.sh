#!/usr/bin/env bash
# login-hook.sh: allow a login only on a fresh location that nothing speaks against, and log
# where it came from. --enforce applies the location policy: with no zones configured it allows
# any location at most policy.maxAge (5 min) old on which no distrusted signal fired (an
# impossible jump, spoofed satellites, a skewed clock, a dead-reckoned fix); a missing, stale or
# distrusted location is denied. Add zones with Examples/policy/.
# Use from a PAM exec hook or a login script:   Examples/login-hook.sh || exit 1
# GEOLOCATE_SOURCE, GEOLOCATE_CONFIG and GEOLOCATE_STATE_DIR are honoured as usual;
# set GEOLOCATE_REPLAY to a log to try it without a receiver:
#   GEOLOCATE_REPLAY=Examples/nmea/kiosk-gnss.nmea Examples/login-hook.sh
set -uo pipefail
geolocate=${GEOLOCATE:-geolocate}
args=(trigger login --enforce)
[ -n "${GEOLOCATE_REPLAY:-}" ] && args+=(--replay "$GEOLOCATE_REPLAY")

# --enforce: exit 4 unless the policy allows; the record (with its "policy") is still printed.
record=$("$geolocate" "${args[@]}" 2>/dev/null)
status=$?
case $status in
  0) jq -r '"login at \(.location.latitude),\(.location.longitude) ±\(.location.accuracy // "?") m, \(.locationSource), \(.ageMs) ms old"' <<<"$record" ;;
  4) echo "login denied: $(jq -r '.policy.decision + ": " + .policy.reason' <<<"$record")" >&2; exit 1 ;;
  *) echo "login denied: geolocate failed (exit $status)" >&2; exit 1 ;;
esac
