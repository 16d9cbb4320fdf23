#!/bin/sh
# pam-harness.sh SERVICE_FILE USER OPERATION [pamtester -I item=value ...]
#
# Runs pamtester (a real PAM stack) against a pam.d service made from SERVICE_FILE, with the
# system log captured: inside a private mount namespace /dev becomes a tmpfs of links to the
# real device nodes plus our own datagram socket at /dev/log, so nothing reaches (or needs)
# the machine's syslog daemon. Prints pamtester's output, then "rc=N" (its exit status), then
# one "log: DATAGRAM" line for each syslog message. The pam.d file is removed on every path.
# Needs root (unshare, mount, /etc/pam.d).
set -eu
if [ "${PAM_HARNESS_INSIDE:-}" != 1 ]; then
  exec unshare --mount --propagation private env PAM_HARNESS_INSIDE=1 "$0" "$@"
fi
service_file=$1 user=$2 operation=$3
shift 3
work=$(mktemp -d /tmp/pam-harness.XXXXXX)
service=$(basename "$work" | tr 'A-Z.' 'a-z-')  # PAM lowercases service names
receiver=
cleanup() {
  rm -f "/etc/pam.d/$service"
  [ -n "$receiver" ] && kill "$receiver" 2>/dev/null || true
  umount -l /dev 2>/dev/null || true
  umount -l "$work/dev" 2>/dev/null || true
  umount -l /etc/passwd 2>/dev/null || true
  [ -n "${PAM_HARNESS_READONLY:-}" ] && umount -l "$PAM_HARNESS_READONLY" 2>/dev/null || true
  [ -n "${PAM_HARNESS_FULL:-}" ] && umount -l "$PAM_HARNESS_FULL" 2>/dev/null || true
  umount -l "$work/full" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
# PAM_HARNESS_SERVICE_UID: inside the namespace only, the system user `geolocate` is that uid
# (the gate trusts its state directory), whether or not the machine has such a user.
if [ -n "${PAM_HARNESS_SERVICE_UID:-}" ]; then
  grep -v '^geolocate:' /etc/passwd > "$work/passwd"
  echo "geolocate:x:$PAM_HARNESS_SERVICE_UID:$PAM_HARNESS_SERVICE_UID:geolocate (pam-harness):/nonexistent:/usr/sbin/nologin" >> "$work/passwd"
  chmod 644 "$work/passwd"
  mount --bind "$work/passwd" /etc/passwd
fi
# PAM_HARNESS_READONLY=DIR: inside the namespace only, DIR is a read-only bind mount of itself.
if [ -n "${PAM_HARNESS_READONLY:-}" ]; then
  mount --bind "$PAM_HARNESS_READONLY" "$PAM_HARNESS_READONLY"
  mount -o remount,bind,ro "$PAM_HARNESS_READONLY"
fi
# PAM_HARNESS_FULL=DIR: inside the namespace only, DIR is a copy of itself on a 400 KiB tmpfs
# filled to the last block.
if [ -n "${PAM_HARNESS_FULL:-}" ]; then
  mkdir "$work/full"
  mount -t tmpfs -o size=400k,mode=700 tmpfs "$work/full"
  cp -a "$PAM_HARNESS_FULL/." "$work/full/"
  dd if=/dev/zero of="$work/full/.filler" bs=4k 2>/dev/null || true
  mount --bind "$work/full" "$PAM_HARNESS_FULL"
fi
mkdir "$work/dev"
mount --rbind /dev "$work/dev"
mount -t tmpfs -o mode=755 tmpfs /dev
for entry in "$work"/dev/* "$work"/dev/.[!.]*; do
  [ -e "$entry" ] || [ -L "$entry" ] || continue
  name=$(basename "$entry")
  [ "$name" = log ] || ln -s "$entry" "/dev/$name"
done
python3 - "$work" <<'PY' &
import os, socket, sys
work = sys.argv[1]
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind("/dev/log")
os.chmod("/dev/log", 0o666)
open(os.path.join(work, "ready"), "w").close()
with open(os.path.join(work, "log"), "wb") as out:
    while True:
        datagram = sock.recv(65536)
        if datagram == b"pam-harness: end":
            break
        out.write(datagram.replace(b"\n", b"\\n") + b"\n")
        out.flush()
PY
receiver=$!
tries=0
until [ -e "$work/ready" ]; do
  tries=$((tries + 1))
  [ $tries -le 200 ] || { echo "pam-harness: the log receiver did not start" >&2; exit 2; }
  sleep 0.05
done
cp "$service_file" "/etc/pam.d/$service"
chmod 644 "/etc/pam.d/$service"
set +e
pamtester "$@" "$service" "$user" "$operation" 2>&1
rc=$?
set -e
# Datagrams arrive in order: the end marker comes after everything the hook wrote.
python3 -c 'import socket; s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b"pam-harness: end", "/dev/log")'
wait "$receiver" || true
receiver=
echo "rc=$rc"
sed 's/^/log: /' "$work/log"
