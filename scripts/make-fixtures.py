#!/usr/bin/env python3
"""make-fixtures.py - regenerate the example and test NMEA logs (deterministic).

Each log is a '#' header, an optional no-fix prelude (GGA quality 0, RMC status V,
GSA mode 1, as a receiver sends while acquiring), then epochs made by
../shared/tools/nmea-gen.py. Run from the project root: scripts/make-fixtures.py
"""
import datetime as dt
import os
import subprocess

GEN = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tools", "nmea-gen.py")


def nmea(body):
    c = 0
    for ch in body.encode():
        c ^= ch
    return "$%s*%02X\r\n" % (body, c)


def prelude(start, seconds, talker="GP"):
    out = []
    for i in range(seconds):
        t = start + dt.timedelta(seconds=i)
        hms = t.strftime("%H%M%S") + ".00"
        out.append(nmea("%sGGA,%s,,,,,0,00,99.99,,,,,," % (talker, hms)))
        out.append(nmea("%sRMC,%s,V,,,,,,,%s,,,N" % (talker, hms, t.strftime("%d%m%y"))))
        out.append(nmea("%sGSA,A,1,,,,,,,,,,,,,99.99,99.99,99.99" % talker))
        out.append(nmea("GPGSV,1,1,02,05,40,083,18,13,22,310,"))
    return "".join(out)


def make(path, header, start, nofix_seconds, epochs, *extra):
    start = dt.datetime.fromisoformat(start)
    fix_start = start + dt.timedelta(seconds=nofix_seconds)
    body = ""
    if epochs:
        body = subprocess.run(
            ["python3", GEN, "--epochs", str(epochs), "--seed", "11", "--quiet",
             "--start", fix_start.strftime("%Y-%m-%dT%H:%M:%SZ"), *extra],
            check=True, capture_output=True, text=True).stdout
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as f:
        f.write("".join("# %s\n" % line for line in header))
        f.write(prelude(start, nofix_seconds, "GN" if "GN" in extra else "GP"))
        f.write(body)


make("Examples/nmea/maynooth-drive.nmea",
     ["A car leaving Maynooth, Co. Kildare, after a cold start: 8 s without a fix,",
      "then 120 s of 1 Hz fixes (GGA RMC GSA GSV VTG GST). Made by scripts/make-fixtures.py."],
     "2026-11-21T08:00:00+00:00", 8, 120,
     "--start-lat", "53.3613367", "--start-lon", "-6.5056200", "--start-alt", "62")
make("Examples/nmea/kiosk-gnss.nmea",
     ["A multi-GNSS receiver (GN talker, GPS+GLONASS+Galileo, with GLL and ZDA) at a kiosk",
      "in Lyon, fixed from the first epoch: 60 s at 1 Hz. Made by scripts/make-fixtures.py."],
     "2026-11-21T14:30:00+00:00", 0, 60,
     "--talker", "GN", "--extra", "GLL,ZDA", "--start-lat", "45.7640", "--start-lon", "4.8357")
make("Tests/GeolocateCoreTests/Fixtures/prelude-3s.nmea",
     ["3 s without a fix, then 5 fixes at 1 Hz from 2026-11-22T10:00:03Z (53.3613367,-6.50562).",
      "force-current times out at a 1500 ms timeout and gets a fix at 5 s."],
     "2026-11-22T10:00:00+00:00", 3, 5,
     "--start-lat", "53.3613367", "--start-lon", "-6.5056200", "--start-alt", "62")
make("Tests/GeolocateCoreTests/Fixtures/nofix-only.nmea",
     ["10 s of a receiver that never gets a fix (2026-11-22T11:00:00Z to :09)."],
     "2026-11-22T11:00:00+00:00", 10, 0)
make("Tests/GeolocateCoreTests/Fixtures/gpsd-fixes.nmea",
     ["120 s of 1 Hz 3D fixes from 2026-11-22T12:00:00Z, fixed from the first epoch, for gpsfake:",
      "a looping log in which gpsd holds a fix at every moment after its first epoch."],
     "2026-11-22T12:00:00+00:00", 0, 120,
     "--start-lat", "53.3613367", "--start-lon", "-6.5056200", "--start-alt", "62")
