#!/usr/bin/env python3
"""ubx-mix.py - an NMEA log with a u-blox receiver's UBX set interleaved, for scripts/bench.

Usage: ubx-mix.py IN.nmea OUT.log

Copies IN (a log of ../shared/tools/nmea-gen.py: each epoch starts with its GGA and has an RMC)
to OUT and, after each epoch's sentences, writes the UBX messages an OSNMA-capable u-blox
receiver sends each epoch: NAV-PVT (nmaFixStatus and authTime set), NAV-STATUS, NAV-SIG with
20 Galileo signals (12 authenticated), SEC-SIG version 2 and SEC-OSNMA, about 530 bytes, with
the epoch's time (NAV-PVT's UTC fields from the GGA's time and the RMC's date; the GPS time of
week, UTC + 18 s, in NAV-PVT, NAV-STATUS and NAV-SIG), so geolocate matches them to the epoch.

pyubx2 (1.4.0) builds the set once; each epoch's copy then gets its time fields written at
their offsets and its checksums computed again with pyubx2's `calc_checksum` (building every
message with pyubx2 takes ~18 ms an epoch, an hour for the bench's 200,000). The copies are
checked against messages pyubx2 builds afresh for the first 50 epochs and every 10,000th, and
every one of those is parsed back by `pyubx2.UBXReader` (checksum checked): a mismatch stops
the script.
"""
import datetime
import struct
import sys

from pyubx2 import GET, UBXMessage, UBXReader
from pyubx2.ubxhelpers import calc_checksum

LEAP_SECONDS = 18
GPS_EPOCH = datetime.datetime(1980, 1, 6)
SIGNALS, AUTHENTICATED = 20, 12


def build(when):
    """The epoch's UBX set built by pyubx2 from scratch: [(kind, bytes)]."""
    tow = time_of_week(when)
    signals = {"iTOW": tow, "version": 0, "numSigs": SIGNALS}
    for n in range(1, SIGNALS + 1):
        suffix = "_%02d" % n
        signals.update({"gnssId" + suffix: 2, "svId" + suffix: n, "sigId" + suffix: 0, "cno" + suffix: 30 + n,
                        "qualityInd" + suffix: 7, "prUsed" + suffix: 1, "health" + suffix: 1,
                        "authStatus" + suffix: 1 if n <= AUTHENTICATED else 0})
    osnma = {"version": 1, "osnmaEnabled": 1, "nmaStatus": 2, "timSyncEnabled": 1, "timSyncStatus": 1,
             "authSVs": 8, "numSVs": 8}
    for n in range(1, 9):
        osnma["svId_%02d" % n] = n
        osnma["authStatus_%02d" % n] = 1
    return [
        ("pvt", UBXMessage("NAV", "NAV-PVT", GET, iTOW=tow, year=when.year, month=when.month, day=when.day,
                           hour=when.hour, min=when.minute, second=when.second, validDate=1, validTime=1,
                           fullyResolved=1, tAcc=20, nano=0, fixType=3, gnssFixOk=1, numSV=12, lon=11.5, lat=48.1,
                           height=600000, hMSL=545400, hAcc=2000, vAcc=3000, pDOP=1.2, nmaFixStatus=1,
                           authTime=1).serialize()),
        ("status", UBXMessage("NAV", "NAV-STATUS", GET, iTOW=tow, gpsFix=3, gpsFixOk=1, towSet=1, wknSet=1,
                              spoofDetState=1, ttff=30000, msss=100000).serialize()),
        ("sig", UBXMessage("NAV", "NAV-SIG", GET, **signals).serialize()),
        ("secsig", UBXMessage("SEC", "SEC-SIG", GET, version=2, jamNumCentFreqs=0, jamDetEnabled=1, jammingState=1,
                              spfDetEnabled=1, spoofingState=1).serialize()),
        ("osnma", UBXMessage("SEC", "SEC-OSNMA", GET, **osnma).serialize()),
    ]


def time_of_week(when):
    seconds = (when - GPS_EPOCH).total_seconds() + LEAP_SECONDS
    return int(round(seconds * 1000)) % (7 * 86400 * 1000)


def patched(template, when):
    """The template set with `when`'s time fields written in, and its checksums made again."""
    tow = time_of_week(when)
    out = []
    for kind, packet in template:
        packet = bytearray(packet)
        if kind in ("pvt", "status", "sig"):
            struct.pack_into("<I", packet, 6, tow)
        if kind == "pvt":
            struct.pack_into("<HBBBBB", packet, 10, when.year, when.month, when.day, when.hour, when.minute, when.second)
        if kind in ("pvt", "status", "sig"):
            packet[-2:] = calc_checksum(bytes(packet[2:-2]))
        out.append(bytes(packet))
    return b"".join(out)


def main():
    source, target = sys.argv[1], sys.argv[2]
    template = build(datetime.datetime(2024, 3, 1, 12))
    epochs = checked = 0
    pending_time = pending_date = None
    with open(source, "rb") as inp, open(target, "wb") as out:
        def close_epoch():
            nonlocal epochs, checked
            if pending_time is None or pending_date is None:
                return
            when = datetime.datetime.strptime(pending_date + pending_time, "%d%m%y%H%M%S")
            data = patched(template, when)
            if epochs < 50 or epochs % 10000 == 0:
                fresh = b"".join(packet for _, packet in build(when))
                if fresh != data:
                    sys.exit("ubx-mix: epoch %d (%s): patched packets differ from pyubx2's" % (epochs, when))
                offset = 0
                while offset < len(data):
                    length = struct.unpack_from("<H", data, offset + 4)[0] + 8
                    UBXReader.parse(data[offset:offset + length])  # raises on a bad checksum
                    offset += length
                checked += 1
            out.write(data)
            epochs += 1

        for line in inp:
            if line[3:6] == b"GGA":
                close_epoch()
                pending_time, pending_date = line[7:13].decode(), None
            elif line[3:6] == b"RMC":
                fields = line.split(b",")
                if len(fields) > 9:
                    pending_date = fields[9].decode()
            out.write(line)
        close_epoch()
    print("ubx-mix: %d epochs, a UBX set of %d bytes each; %d sets checked against pyubx2"
          % (epochs, sum(len(packet) for _, packet in template), checked), file=sys.stderr)


main()
