#!/usr/bin/env python3
"""ubx-stream.py - a u-blox receiver's mixed NMEA and UBX output, for geolocate's tests.

Usage: ubx-stream.py [options] > LOG

Writes EPOCHS one-second epochs from START: each a GGA and an RMC at one place (NMEA
written here, checksums computed here) and the UBX messages asked for, every UBX packet
made by PyPI's pyubx2 (an encoder geolocate's decoder shares nothing with):

  --pvt NMA        UBX-NAV-PVT with flags3.nmaFixStatus NMA (0 or 1) and authTime the same
  --status S       UBX-NAV-STATUS with flags2.spoofDetState S (0-3)
  --nav-sig A/N    UBX-NAV-SIG with N Galileo signals, the first A with sigFlags.authStatus
  --sec-sig J,S    UBX-SEC-SIG with jammingState J and spoofingState S ("-" leaves detection off)
  --sec-sig-version 1|2
  --sec-sig-epoch K:J,S  epoch K's SEC-SIG says J,S instead (repeatable): an alarm in one epoch
  --sec-sig-first  each epoch's SEC-SIG before its NAV-PVT (so the first one comes before any time)
  --osnma E,NMA,T,A  UBX-SEC-OSNMA: osnmaEnabled E, nmaStatus NMA, timSyncStatus T, authSVs A
  --nav-clock      UBX-NAV-CLOCK, a message that carries no verdict (a u-blox that sends
                   none of the verdict messages)
  --ubx-first      each epoch's UBX before its NMEA (a receiver may send either order)
  --corrupt        also a UBX frame with a wrong checksum and one with a length past 8192
                   bytes before each epoch (each must be skipped and counted)
  --mask-pvt-from K  from epoch K on, NAV-PVT says nmaFixStatus 0 (the receiver lost OSNMA)
  --pvt-offset MS  NAV-PVT's time (UTC fields and time of week) MS milliseconds after its
                   epoch's (a solution of another time, which must not match the epoch)
  --ubx-until K    UBX for the epochs before K only; NMEA goes on (the receiver fell silent)

The UBX messages' times match their epoch: NAV-PVT's UTC fields and, for the others, the GPS
time of week (UTC + 18 s of leap seconds).
"""
import argparse
import datetime
import sys

from pyubx2 import GET, UBXMessage

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--start", default="2026-03-01T12:00:00")
parser.add_argument("--lat", type=float, default=53.3498)
parser.add_argument("--lon", type=float, default=-6.2603)
parser.add_argument("--pvt", type=int)
parser.add_argument("--status", type=int)
parser.add_argument("--nav-sig")
parser.add_argument("--sec-sig")
parser.add_argument("--sec-sig-version", type=int, default=2)
parser.add_argument("--sec-sig-epoch", action="append", default=[])
parser.add_argument("--sec-sig-first", action="store_true")
parser.add_argument("--osnma")
parser.add_argument("--nav-clock", action="store_true")
parser.add_argument("--ubx-first", action="store_true")
parser.add_argument("--corrupt", action="store_true")
parser.add_argument("--mask-pvt-from", type=int)
parser.add_argument("--pvt-offset", type=int, default=0)
parser.add_argument("--ubx-until", type=int)
args = parser.parse_args()

LEAP_SECONDS = 18
GPS_EPOCH = datetime.datetime(1980, 1, 6)


def nmea(body):
    checksum = 0
    for byte in body.encode("ascii"):
        checksum ^= byte
    return f"${body}*{checksum:02X}\r\n".encode("ascii")


def angle(value, degree_digits, hemispheres):
    hemisphere = hemispheres[0] if value >= 0 else hemispheres[1]
    value = abs(value)
    degrees = int(value)
    minutes = (value - degrees) * 60
    return f"{degrees:0{degree_digits}d}{minutes:07.4f}", hemisphere


def epoch_nmea(when):
    hms = when.strftime("%H%M%S") + ".00"
    lat, ns = angle(args.lat, 2, "NS")
    lon, ew = angle(args.lon, 3, "EW")
    gga = nmea(f"GNGGA,{hms},{lat},{ns},{lon},{ew},1,12,0.8,20.0,M,55.0,M,,")
    rmc = nmea(f"GNRMC,{hms},A,{lat},{ns},{lon},{ew},0.0,0.0,{when.strftime('%d%m%y')},,,A,V")
    return gga + rmc


def time_of_week(when):
    seconds = (when - GPS_EPOCH).total_seconds() + LEAP_SECONDS
    return int(seconds * 1000) % (7 * 86400 * 1000)


def epoch_ubx(index, when):
    tow = time_of_week(when)
    packets = []
    if args.ubx_until is not None and index >= args.ubx_until:
        return b""
    if args.pvt is not None:
        nma = 0 if args.mask_pvt_from is not None and index >= args.mask_pvt_from else args.pvt
        solved = when + datetime.timedelta(milliseconds=args.pvt_offset)
        packets.append(UBXMessage(
            "NAV", "NAV-PVT", GET, iTOW=time_of_week(solved), year=solved.year, month=solved.month,
            day=solved.day, hour=solved.hour, min=solved.minute, second=solved.second, validDate=1,
            validTime=1, fullyResolved=1, tAcc=20, nano=solved.microsecond * 1000, fixType=3, gnssFixOk=1, numSV=12,
            lon=args.lon, lat=args.lat, height=75000, hMSL=20000, hAcc=2000, vAcc=3000,
            pDOP=1.2, nmaFixStatus=nma, authTime=nma))
    if args.status is not None:
        packets.append(UBXMessage("NAV", "NAV-STATUS", GET, iTOW=tow, gpsFix=3, gpsFixOk=1,
                                  towSet=1, wknSet=1, spoofDetState=args.status, ttff=30000,
                                  msss=100000 + index * 1000))
    if args.nav_sig is not None:
        authenticated, count = (int(x) for x in args.nav_sig.split("/"))
        fields = {"iTOW": tow, "version": 0, "numSigs": count}
        for n in range(1, count + 1):
            suffix = f"_{n:02d}"
            fields.update({"gnssId" + suffix: 2, "svId" + suffix: n, "sigId" + suffix: 0,
                           "cno" + suffix: 40, "qualityInd" + suffix: 7, "prUsed" + suffix: 1,
                           "health" + suffix: 1, "authStatus" + suffix: 1 if n <= authenticated else 0})
        packets.append(UBXMessage("NAV", "NAV-SIG", GET, **fields))
    overrides = dict(item.split(":") for item in args.sec_sig_epoch)
    sec_sig = overrides.get(str(index), args.sec_sig)
    if sec_sig is not None:
        jamming, spoofing = sec_sig.split(",")
        jam = {} if jamming == "-" else {"jamDetEnabled": 1, "jammingState": int(jamming)}
        spoof = {} if spoofing == "-" else {"spfDetEnabled": 1, "spoofingState": int(spoofing)}
        if args.sec_sig_version == 1:
            packets.append(UBXMessage("SEC", "SEC-SIG", GET, version=1, **jam, **spoof))
        else:
            packets.append(UBXMessage("SEC", "SEC-SIG", GET, version=2, jamNumCentFreqs=0, **jam, **spoof))
        if args.sec_sig_first:
            packets.insert(0, packets.pop())
    if args.osnma is not None:
        enabled, status, sync, svs = (int(x) for x in args.osnma.split(","))
        fields = {"version": 1, "osnmaEnabled": enabled, "nmaStatus": status, "timSyncEnabled": 1,
                  "timSyncStatus": sync, "authSVs": svs, "numSVs": svs}
        for n in range(1, svs + 1):
            fields[f"svId_{n:02d}"] = n
            fields[f"authStatus_{n:02d}"] = 1
        packets.append(UBXMessage("SEC", "SEC-OSNMA", GET, **fields))
    if args.nav_clock:
        packets.append(UBXMessage("NAV", "NAV-CLOCK", GET, iTOW=tow, clkB=100, clkD=5, tAcc=20, fAcc=300))
    out = b"".join(packet.serialize() for packet in packets)
    if args.corrupt:
        good = UBXMessage("NAV", "NAV-STATUS", GET, iTOW=tow, spoofDetState=3).serialize()
        bad_checksum = good[:-1] + bytes([good[-1] ^ 0xFF])
        too_long = b"\xb5\x62\x01\x03\x01\x20" + b"\x00" * 16
        out = bad_checksum + too_long + b"\r\n" + out
    return out


start = datetime.datetime.fromisoformat(args.start)
stream = sys.stdout.buffer
for index in range(args.epochs):
    when = start + datetime.timedelta(seconds=index)
    text, binary = epoch_nmea(when), epoch_ubx(index, when)
    stream.write(binary + text if args.ubx_first else text + binary)
stream.flush()
