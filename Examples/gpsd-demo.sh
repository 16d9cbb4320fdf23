#!/usr/bin/env bash
# gpsd-demo.sh: the same job through a real gpsd, no receiver needed. Starts a private gpsd with
# gpsfake (Debian: gpsd-clients) on a free loopback port, fed by the bundled kiosk log, then asks
# it with `geolocate trigger`. Private state and configuration; gpsd is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
geolocate=$(swift build --show-bin-path)/geolocate
demo=$(mktemp -d)
export GEOLOCATE_STATE_DIR="$demo/state" GEOLOCATE_CONFIG="$demo/config.json"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
source="gpsd://127.0.0.1:$port"

# gpsfake in its own session, so gpsd and gpsfake end together by process group.
setsid gpsfake -q -n -c 0.1 -P "$port" Examples/nmea/kiosk-gnss.nmea >"$demo/gpsfake.log" 2>&1 &
fake=$!
trap 'kill -TERM -- -$fake 2>/dev/null; wait $fake 2>/dev/null; rm -f /tmp/gpsfake-$fake.sock; rm -rf "$demo"' EXIT
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break; sleep 0.1; done

run() {
  echo
  echo "\$ geolocate $*"
  "$geolocate" "$@" || echo "(exit $?)"
}

echo "== gpsd is at $source. force-current: the fix gpsd holds if at most 2 s old, else the next"
echo "   one, within 5 s. The log is dated 2026-11-21, so ageMs is large: gpsd reports the receiver's time."
run trigger login --source "$source" --permission fine --timeout 5s
echo "== logout is force-last-known: the fresher of gpsd's own last fix (asked with ?POLL;) and the"
echo "   one geolocate remembered; never waits for the receiver"
run trigger logout --source "$source" --permission fine
echo "== nothing listens on port 1: unavailable at once, one line on stderr"
run trigger login --source gpsd://127.0.0.1:1 --permission fine
