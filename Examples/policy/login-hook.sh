#!/usr/bin/env bash
# login-hook.sh: allow a login only on the premises (Examples/policy/zones.geojson: an office
# with a loading dock inside it that is denied, and a desk elsewhere), in an allowed country.
# Use from a PAM exec hook or a login script:   Examples/policy/login-hook.sh || exit 1
# Try it without a receiver, from the project's root (the config names the zones by a path
# relative to its own directory, so the working directory does not matter):
#   GEOLOCATE_CONFIG=Examples/policy/config.json GEOLOCATE_REPLAY=Examples/nmea/kiosk-gnss.nmea Examples/policy/login-hook.sh
#   GEOLOCATE_CONFIG=Examples/policy/config.json GEOLOCATE_REPLAY=Examples/nmea/maynooth-drive.nmea Examples/policy/login-hook.sh
set -uo pipefail
geolocate=${GEOLOCATE:-geolocate}
args=(trigger login --enforce)
[ -n "${GEOLOCATE_REPLAY:-}" ] && args+=(--replay "$GEOLOCATE_REPLAY" --timeout 10s)

# --enforce: exit 4 unless the policy allows; the record (with its "policy") is still printed.
record=$("$geolocate" "${args[@]}" 2>/dev/null)
status=$?
reason=$(jq -r '(.policy.decision // "no decision") + ": " + (.policy.reason // "no policy")' <<<"$record" 2>/dev/null)
case $status in
  0) echo "login allowed: $reason" ;;
  4) echo "login denied: $reason" >&2; exit 1 ;;
  *) echo "login denied: geolocate failed (exit $status)" >&2; exit 1 ;;
esac
