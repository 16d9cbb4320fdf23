#!/usr/bin/env python3
"""pty-nmea.py - a GNSS receiver on a pseudo-terminal, for geolocate's live-input tests.

Usage: pty-nmea.py LOG PATHFILE [LINES_PER_SECOND] [HANGUP_AFTER_SECONDS]

Opens a pseudo-terminal in raw mode (no echo, no line editing: a serial receiver's), writes
its path (/dev/pts/N) to PATHFILE, then writes LOG's lines to it, LINES_PER_SECOND of them
(default 200), from the start again at the end, until it is killed. The terminal stays open
on this side, so a reader that comes and goes never sees it hang up. With
HANGUP_AFTER_SECONDS it writes nothing and hangs up (closes both sides) after that long: a
receiver unplugged.
"""
import os
import sys
import time
import tty

log, pathfile = sys.argv[1:3]
rate = float(sys.argv[3]) if len(sys.argv) > 3 else 200.0
hangup = float(sys.argv[4]) if len(sys.argv) > 4 else None
master, slave = os.openpty()
tty.setraw(slave)
with open(pathfile + ".tmp", "w", encoding="utf-8") as f:
    f.write(os.ttyname(slave))
os.rename(pathfile + ".tmp", pathfile)
if hangup is not None:
    time.sleep(hangup)
    os.close(slave)
    os.close(master)
    time.sleep(3600)
with open(log, "rb") as f:
    lines = f.read().splitlines(keepends=True)
while True:
    for line in lines:
        os.write(master, line)
        time.sleep(1.0 / rate)
