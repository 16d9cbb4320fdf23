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


def stay_log(path, header, start, drive_seconds, stop_seconds):
    """A drive, a stop of stop_seconds at the drive's last position (GGA and RMC at 1 Hz, the
    receiver's noise of a few decimetres), then a second drive away from there."""
    start = dt.datetime.fromisoformat(start)
    truth = path + ".truth"
    first = subprocess.run(
        ["python3", GEN, "--epochs", str(drive_seconds), "--seed", "31", "--quiet", "--truth", truth, "--start-alt", "61",
         "--start", start.strftime("%Y-%m-%dT%H:%M:%SZ"), "--start-lat", "53.3613367", "--start-lon", "-6.5056200"],
        check=True, capture_output=True, text=True).stdout
    with open(truth) as f:
        last = [line for line in f if line.strip()][-1]
    os.remove(truth)
    import json
    end = json.loads(last)
    lat, lon = end["lat"], end["lon"]
    last_gga = [line for line in first.splitlines() if line.startswith("$GPGGA")][-1].split(",")
    altitude, separation = last_gga[9], last_gga[11]
    stop_start = start + dt.timedelta(seconds=drive_seconds)
    stop = []
    for i in range(stop_seconds):
        t = stop_start + dt.timedelta(seconds=i)
        jitter = ((i * 7919) % 11 - 5) * 2e-7
        la, lo = lat + jitter, lon - jitter
        lat_text = "%02d%08.5f,%s" % (int(abs(la)), (abs(la) % 1) * 60, "N" if la >= 0 else "S")
        lon_text = "%03d%08.5f,%s" % (int(abs(lo)), (abs(lo) % 1) * 60, "E" if lo >= 0 else "W")
        hms = t.strftime("%H%M%S") + ".00"
        stop.append(nmea("GPGGA,%s,%s,%s,1,09,0.90,%s,M,%s,M,," % (hms, lat_text, lon_text, altitude, separation)))
        stop.append(nmea("GPRMC,%s,A,%s,%s,0.000,0.00,%s,,,A" % (hms, lat_text, lon_text, t.strftime("%d%m%y"))))
    second_start = stop_start + dt.timedelta(seconds=stop_seconds)
    second = subprocess.run(
        ["python3", GEN, "--epochs", str(drive_seconds), "--seed", "32", "--quiet", "--start-alt", "61",
         "--start", second_start.strftime("%Y-%m-%dT%H:%M:%SZ"), "--start-lat", "%.10f" % lat, "--start-lon", "%.10f" % lon],
        check=True, capture_output=True, text=True).stdout
    def without_gsv(text):
        return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("$GPGSV"))
    with open(path, "w", newline="") as f:
        f.write("".join("# %s\n" % line for line in header))
        f.write(without_gsv(first) + "".join(stop) + without_gsv(second))


stay_log("Tests/GeolocateCoreTests/Fixtures/stay-15min.nmea",
         ["A drive of 120 s from 2026-11-22T09:00:00Z, a stop of 900 s (09:02:00 to 09:16:59) at its",
          "last position, then a drive of 120 s away from there: one visit of 15 minutes. No GSV."],
         "2026-11-22T09:00:00+00:00", 120, 900)
