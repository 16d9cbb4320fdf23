#!/usr/bin/env python3
"""spoof-nmea.py - turn an honest NMEA-0183 log into a "spoofed" one, for the spoofing-detector tests.

Usage: spoof-nmea.py --in FILE --out FILE --from-epoch K [--snr 45] [--jump-km 800]
                     [--bearing 90] [--truth FILE]

Epochs are counted by changes of the UTC time field of GGA/RMC (epoch 0 is the first). From
epoch K on, every GSV SNR becomes SNR+(PRN%3-1) (empty SNRs stay empty; an NMEA 4.1 signal-id
field after the groups is kept; --snr 0 keeps every SNR as it is), and the position in GGA/RMC/GLL/GNS is moved --jump-km km
along --bearing degrees (spherical destination point, R = 6371008.8 m, same number of decimals
in the minutes). Modified sentences get a new checksum; every other byte is copied as is.
Sentences with a bad or missing checksum, or over 1024 bytes, are never modified (nor used to
count epochs), so a corrupted input keeps its corruption. --truth writes one JSON line per
epoch: {"epoch": N, "time": "hhmmss.ss", "spoofed": bool}. Deterministic; stdlib only.
Exit 2 with a one-line message on bad arguments or when the input has fewer than K+1 epochs.
"""
import argparse
import functools
import json
import math
import operator
import re
import sys

EARTH_R = 6371008.8
SENTENCE = re.compile(r"\$([^*$]*)\*([0-9A-Fa-f]{2})")
POS = {"GGA": 2, "RMC": 3, "GLL": 1, "GNS": 2}  # index of the latitude field


def fail(message):
    sys.stderr.write("spoof-nmea.py: error: %s\n" % message)
    sys.exit(2)


class Parser(argparse.ArgumentParser):
    def error(self, message):
        fail(message)


def checksum(body):
    return "%02X" % functools.reduce(operator.xor, body.encode("latin-1"), 0)


def parse_coord(value, hemi, width):
    """'ddmm.mmmm' + hemisphere -> (signed degrees, decimals of the minutes), or None."""
    if hemi not in ("NS" if width == 2 else "EW") or not re.fullmatch(r"\d+(\.\d*)?", value):
        return None
    if len(value.split(".")[0]) != width + 2:
        return None
    deg = int(value[:width]) + float(value[width:]) / 60.0
    dec = len(value.split(".")[1]) if "." in value else 0
    return (-deg if hemi in "SW" else deg), dec, "." in value


def fmt_coord(deg, dec, dot, width, hemis):
    a = abs(deg)
    d = int(a)
    m = round((a - d) * 60.0, dec)
    if m >= 60.0:
        d, m = d + 1, 0.0
    mins = "%0*.*f" % (dec + 3 if dec else 2, dec, m) + ("." if dot and not dec else "")
    return "%0*d%s" % (width, d, mins), hemis[0] if deg >= 0 else hemis[1]


def destination(lat, lon, dist_m, bearing):
    p1, l1, t = map(math.radians, (lat, lon, bearing))
    d = dist_m / EARTH_R
    p2 = math.asin(math.sin(p1) * math.cos(d) + math.cos(p1) * math.sin(d) * math.cos(t))
    l2 = l1 + math.atan2(math.sin(t) * math.sin(d) * math.cos(p1),
                         math.cos(d) - math.sin(p1) * math.sin(p2))
    lon2 = (math.degrees(l2) + 180.0) % 360.0 - 180.0
    return math.degrees(p2), lon2


def spoof(fields, a):
    """Modify the fields of one checksum-valid sentence in place; True if anything changed."""
    kind, old = fields[0][2:], list(fields)
    if kind == "GSV" and a.snr:
        data = fields[4:]
        for g in range(len(data) // 4):  # a trailing 4.1 signal id (len % 4 == 1) is kept
            prn = data[4 * g]
            if data[4 * g + 3] != "":
                fields[4 * g + 7] = "%02d" % (a.snr + (int(prn) if prn.isdigit() else 0) % 3 - 1)
    elif kind in POS and len(fields) > POS[kind] + 3:
        i = POS[kind]
        la = parse_coord(fields[i], fields[i + 1], 2)
        lo = parse_coord(fields[i + 2], fields[i + 3], 3)
        if la is not None and lo is not None:
            lat, lon = destination(la[0], lo[0], a.jump_km * 1000.0, a.bearing)
            fields[i], fields[i + 1] = fmt_coord(lat, la[1], la[2], 2, "NS")
            fields[i + 2], fields[i + 3] = fmt_coord(lon, lo[1], lo[2], 3, "EW")
    return fields != old


def main():
    p = Parser(description="Make a spoofed copy of an NMEA-0183 log (see the docstring).")
    p.add_argument("--in", dest="inp", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--from-epoch", type=int, required=True)
    p.add_argument("--snr", type=int, default=45)
    p.add_argument("--jump-km", type=float, default=800.0)
    p.add_argument("--bearing", type=float, default=90.0)
    p.add_argument("--truth")
    a = p.parse_args()
    if a.from_epoch < 0:
        fail("--from-epoch must be >= 0")
    if not 0 <= a.snr <= 98:
        fail("--snr must be in 0..98 (SNR +-1 must stay a 2-digit value; 0 keeps the SNRs)")
    if not (math.isfinite(a.jump_km) and 0 <= a.jump_km <= 20000):
        fail("--jump-km must be in 0..20000")
    if not math.isfinite(a.bearing):
        fail("--bearing must be a finite number")
    try:
        with open(a.inp, "rb") as f:
            lines = [b.decode("latin-1") for b in f.read().splitlines(keepends=True)]  # CR/LF only
    except OSError as e:
        fail("cannot read %s: %s" % (a.inp, e.strerror))

    out, times, epoch = [], [], -1
    for line in lines:
        text = line.rstrip("\r\n")
        pieces = re.split(r"(?=\$)", text)  # a spliced line may hold several sentences
        for n, piece in enumerate(pieces):
            m = SENTENCE.fullmatch(piece)
            if not m or len(piece) > 1024 or checksum(m.group(1)) != m.group(2).upper():
                continue
            fields = m.group(1).split(",")
            if fields[0][2:] in ("GGA", "RMC") and len(fields) > 1 and fields[1]:
                if not times or fields[1] != times[-1]:
                    times.append(fields[1])
                epoch = len(times) - 1
            if epoch >= a.from_epoch and spoof(fields, a):
                body = ",".join(fields)
                pieces[n] = "$%s*%s" % (body, checksum(body))
        out.append("".join(pieces) + line[len(text):])
    if len(times) < a.from_epoch + 1:
        fail("%s has %d epochs, --from-epoch %d needs at least %d"
             % (a.inp, len(times), a.from_epoch, a.from_epoch + 1))
    try:
        with open(a.out, "wb") as f:
            f.write("".join(out).encode("latin-1"))
        if a.truth:
            with open(a.truth, "w") as f:
                for i, t in enumerate(times):
                    f.write(json.dumps({"epoch": i, "time": t, "spoofed": i >= a.from_epoch}) + "\n")
    except OSError as e:
        fail("cannot write: %s" % e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
