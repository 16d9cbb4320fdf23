#!/bin/sh
# device-harness.sh WORK ROLE COMMAND...
#
# Runs COMMAND as one role of a deployed device (root, geolocate, monitor or outsider) in a
# private mount namespace where /etc and /var/lib are overlays whose changes live in WORK: the
# first call makes the device as the package would (the user and group geolocate, uid and gid
# 64101; /etc/geolocate 0755 with config.json root:geolocate 0640; /var/lib/geolocate
# geolocate:geolocate 0750) plus a monitoring user (64102, in the group geolocate) and an
# outsider (64103), and later calls see what earlier ones left. The machine's own /etc and
# /var/lib are never changed. COMMAND runs with a clean environment (PATH, HOME of the role,
# and the variables named in DEVICE_HARNESS_ENV, "NAME=VALUE" words); its output and exit
# status are its own. Needs root (unshare, mount).
set -eu
if [ "${DEVICE_HARNESS_INSIDE:-}" != 1 ]; then
  exec unshare --mount --propagation private env DEVICE_HARNESS_INSIDE=1 "$0" "$@"
fi
work=$1 role=$2
shift 2
for tree in etc var-lib; do mkdir -p "$work/$tree/upper" "$work/$tree/work"; done
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$work/etc/upper,workdir=$work/etc/work" /etc
mount -t overlay overlay -o "lowerdir=/var/lib,upperdir=$work/var-lib/upper,workdir=$work/var-lib/work" /var/lib
if [ ! -e "$work/made" ]; then
  for file in passwd group shadow; do
    grep -v '^\(geolocate\|monitor\|outsider\):' "/etc/$file" > "$work/$file" || true
    cat "$work/$file" > "/etc/$file"
  done
  cat >> /etc/passwd <<'EOF'
geolocate:x:64101:64101:geolocate location collector:/var/lib/geolocate:/usr/sbin/nologin
monitor:x:64102:64102:monitoring:/nonexistent:/usr/sbin/nologin
outsider:x:64103:64103:someone else:/nonexistent:/usr/sbin/nologin
EOF
  cat >> /etc/group <<'EOF'
geolocate:x:64101:monitor
monitor:x:64102:
outsider:x:64103:
EOF
  rm -rf /etc/geolocate /var/lib/geolocate
  install -d -m 0755 /etc/geolocate
  printf '{}\n' > /etc/geolocate/config.json
  chown root:geolocate /etc/geolocate/config.json
  chmod 0640 /etc/geolocate/config.json
  install -d -m 0750 -o geolocate -g geolocate /var/lib/geolocate
  touch "$work/made"
fi
case "$role" in
  root) as="" home=/root ;;
  geolocate) as="--reuid=64101 --regid=64101 --groups=64101" home=/var/lib/geolocate ;;
  monitor) as="--reuid=64102 --regid=64102 --groups=64102,64101" home=/nonexistent ;;
  outsider) as="--reuid=64103 --regid=64103 --groups=64103" home=/nonexistent ;;
  *) echo "device-harness: unknown role $role" >&2; exit 2 ;;
esac
# shellcheck disable=SC2086 # the role's setpriv words and the environment's words split on purpose
if [ -z "$as" ]; then
  exec env -i PATH=/usr/bin:/bin HOME="$home" ${DEVICE_HARNESS_ENV:-} "$@"
fi
exec env -i PATH=/usr/bin:/bin HOME="$home" ${DEVICE_HARNESS_ENV:-} setpriv $as "$@"
