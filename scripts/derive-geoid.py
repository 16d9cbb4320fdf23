#!/usr/bin/env python3
"""derive-geoid.py - measure gpsd's built-in geoid separation table and print it.

gpsd fills in the geoid separation from its own coarse EGM2008 grid when a GGA
leaves the field empty, so altitude above the ellipsoid only agrees with gpsd if
geolocate uses the same grid. This script asks the installed gpsd 3.22 itself:
it writes one GGA+RMC epoch with an empty separation at every 5-degree grid
point, replays that log with ../shared/tools/gpsd-oracle.sh, and prints the
separations gpsd reported (metres) as rows from 90S to 90N, 180W to 180E.

Usage: scripts/derive-geoid.py [WORKDIR]   (needs gpsd 3.22 and gpsd-clients)
"""
import json, os, subprocess, sys, tempfile

def nmea(body):
    c = 0
    for ch in body.encode():
        c ^= ch
    return "$%s*%02X\r\n" % (body, c)

def coord(value, width):
    hemi = value < 0
    value = abs(value)
    deg = int(value)
    minutes = (value - deg) * 60
    return ("%0*d%07.4f" % (width, deg, minutes)), hemi

def main():
    work = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
    here = os.path.dirname(os.path.abspath(__file__))
    oracle = os.path.join(here, "..", "..", "shared", "tools", "gpsd-oracle.sh")
    points = [(lat, lon) for lat in range(-90, 91, 5) for lon in range(-180, 181, 5)]
    log = os.path.join(work, "geoid-grid.log")
    with open(log, "w") as out:
        out.write("# geoid probe: one epoch per 5-degree grid point, empty geoid separation\n")
        for i, (lat, lon) in enumerate(points):
            t = 36000 + i  # seconds of day from 10:00:00
            hh, mm, ss = t // 3600, t // 60 % 60, t % 60
            la, south = coord(min(lat, 89.99999), 2) if lat >= 0 else coord(max(lat, -89.99999), 2)
            lo, west = coord(min(abs(lon), 179.99999) * (1 if lon >= 0 else -1), 3)
            stamp = "%02d%02d%02d.00" % (hh, mm, ss)
            out.write(nmea("GPGGA,%s,%s,%s,%s,%s,1,08,1.0,100.0,M,,M,," % (
                stamp, la, "S" if south else "N", lo, "W" if west else "E")))
            out.write(nmea("GPRMC,%s,A,%s,%s,%s,%s,0.0,0.0,010120,,,A" % (
                stamp, la, "S" if south else "N", lo, "W" if west else "E")))
    subprocess.run([oracle, log], check=True, stdout=subprocess.DEVNULL)
    seps = {}
    for line in open(log.replace(".log", ".gpsd322.jsonl")):
        tpv = json.loads(line)
        if "time" in tpv and "geoidSep" in tpv:
            t = tpv["time"][11:19]
            secs = int(t[0:2]) * 3600 + int(t[3:5]) * 60 + int(t[6:8])
            seps[secs - 36000] = tpv["geoidSep"]
    missing = [i for i in range(len(points)) if i not in seps]
    if missing:
        sys.exit("gpsd reported no separation for %d grid points" % len(missing))
    for row in range(37):
        print(", ".join("%.2f" % seps[row * 73 + col] for col in range(73)) + ",")

main()
