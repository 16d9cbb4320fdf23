#!/usr/bin/env python3
"""ubx-oracle.py - UBX packets made by PyPI's pyubx2 1.4.0, and what pyubx2 reads back from them.

Usage: ubx-oracle.py > CASES.jsonl

For UBXReaderTests: one JSON object a line, {"message": NAME, "hex": BYTES, "fields": {...}},
for every status value of each message geolocate decodes (NAV-PVT nmaFixStatus and authTime,
NAV-STATUS spoofDetState, NAV-SIG authStatus per signal, SEC-SIG versions 1 and 2 with
detection on and off, SEC-OSNMA nmaStatus, timSyncStatus, osnmaEnabled and authSVs). BYTES is
the whole frame pyubx2 serialised (sync to checksum); "fields" are the values
`pyubx2.UBXReader.parse` reads back from those bytes, never geolocate's. The bit fields beside
the ones geolocate reads are set to non-zero values, so a shift or mask that is one bit off
shows. Last come frames for the framing tests (payloads holding newlines, `$` and `B5 62`; the
longest payload read, 8192 bytes, as "unknown"; one byte more as "over-limit"). The script
checks that pyubx2 read back what it was asked to encode, and fails if not.
"""
import json
import sys

from pyubx2 import GET, UBXMessage, UBXReader

cases = []


def case(message, wanted, **fields):
    """Encodes `message` with `fields`; records the values of `wanted` pyubx2 parses back."""
    packet = UBXMessage(message.split("-")[0], message, GET, **fields).serialize()
    parsed = UBXReader.parse(packet)
    values = {name: getattr(parsed, name) for name in wanted}
    for name in wanted:
        if name in fields and values[name] != fields[name]:
            sys.exit("ubx-oracle: pyubx2 read %s=%r back from %s, not %r" % (name, values[name], message, fields[name]))
    cases.append({"message": message, "hex": packet.hex(), "fields": values})
    return parsed


# NAV-PVT: nmaFixStatus and authTime each 0 and 1, at times that round, wrap at midnight
# (nano may be negative, or carry the second into the next day), once without validTime, and
# once saying authenticated without a valid fix (gnssFixOk 0).
PVT = ("iTOW", "hour", "min", "second", "nano", "validTime", "gnssFixOk", "nmaFixStatus", "authTime")
times = [(12, 34, 56, 0), (12, 34, 56, 123_400_000), (0, 0, 0, -400_000_000), (23, 59, 59, 999_600_000),
         (7, 0, 1, -1_200)]
index = 0
for nma in (0, 1):
    for auth in (0, 1):
        for hour, minute, second, nano in times:
            index += 1
            case("NAV-PVT", PVT, iTOW=345_600_000 + index * 1000, year=2026, month=3, day=1, hour=hour, min=minute,
                 second=second, nano=nano, validDate=1, validTime=1, fullyResolved=1, fixType=3, gnssFixOk=1,
                 numSV=12, nmaFixStatus=nma, authTime=auth, invalidLlh=1, lastCorrectionAge=15)
case("NAV-PVT", PVT, iTOW=1000, hour=12, min=0, second=0, validDate=1, validTime=0, gnssFixOk=1, nmaFixStatus=1, authTime=1,
     invalidLlh=1, lastCorrectionAge=15)
case("NAV-PVT", PVT, iTOW=2000, hour=12, min=0, second=1, validDate=1, validTime=1, fixType=0, gnssFixOk=0, nmaFixStatus=1,
     authTime=1, invalidLlh=1, lastCorrectionAge=15)

# NAV-STATUS: spoofDetState 0-3, psmState and carrSoln (the bits around it) set.
for state in range(4):
    case("NAV-STATUS", ("iTOW", "spoofDetState"), iTOW=500_000 + state, gpsFix=3, gpsFixOk=1, towSet=1, wknSet=1,
         psmState=3, reserved1=1, spoofDetState=state, reserved2=1, carrSoln=2, ttff=30_000, msss=100_000)

# NAV-SIG: N signals, of which the ones in `authenticated` (numbered from 1) carry authStatus;
# every other sigFlags bit pyubx2 knows set.
for count, authenticated in ((0, ()), (1, (1,)), (5, ()), (5, (2, 4)), (20, range(1, 21)), (20, range(1, 13)),
                             (40, (1, 3, 5, 8, 13, 21, 34, 40))):
    fields = {"iTOW": 600_000 + count, "version": 0, "numSigs": count}
    for n in range(1, count + 1):
        suffix = "_%02d" % n
        fields.update({"gnssId" + suffix: 2, "svId" + suffix: n, "sigId" + suffix: 0, "cno" + suffix: 40,
                       "qualityInd" + suffix: 7, "health" + suffix: 3, "prSmoothed" + suffix: 1, "prUsed" + suffix: 1,
                       "crUsed" + suffix: 1, "doUsed" + suffix: 1, "prCorrUsed" + suffix: 1, "crCorrUsed" + suffix: 1,
                       "doCorrUsed" + suffix: 1, "authStatus" + suffix: 1 if n in authenticated else 0})
    parsed = case("NAV-SIG", ("iTOW", "numSigs"), **fields)
    cases[-1]["fields"]["authStatus"] = [getattr(parsed, "authStatus_%02d" % n) for n in range(1, count + 1)]
    if cases[-1]["fields"]["authStatus"] != [1 if n in authenticated else 0 for n in range(1, count + 1)]:
        sys.exit("ubx-oracle: pyubx2 read other authStatus values back from NAV-SIG")

# SEC-SIG, versions 1 and 2: jamming 0-3 and spoofing 0-3, each also with detection off (its
# state left non-zero, which must not be read).
SIG = ("version", "jamDetEnabled", "jammingState", "spfDetEnabled", "spoofingState")
for version in (1, 2):
    for jamming in ("off", 0, 1, 2, 3):
        for spoofing in ("off", 0, 1, 2, 3):
            fields = {"version": version,
                      "jamDetEnabled": 0 if jamming == "off" else 1, "jammingState": 2 if jamming == "off" else jamming,
                      "spfDetEnabled": 0 if spoofing == "off" else 1, "spoofingState": 3 if spoofing == "off" else spoofing}
            if version == 1:
                fields.update(reserved0=0xFFFFFF, reserved1=0xFFFFFF, reserved2=0xFFFFFF)
            else:
                fields.update(jamNumCentFreqs=0)
            case("SEC-SIG", SIG, **fields)

# SEC-OSNMA: nmaStatus 0-3, timSyncStatus 0-7, osnmaEnabled 0 and 1, authSVs over 0-63, with
# headerAuthStatus, chainInForce, CPKS, numSVs, nmaHeaderUpdate, timSyncReqDiff and authNumTim
# (the bits around the ones read) set.
OSNMA = ("osnmaEnabled", "nmaStatus", "timSyncStatus", "authSVs")
index = 0
for enabled in (0, 1):
    for status in range(4):
        for sync in range(8):
            authenticated = (index * 7) % 64
            index += 1
            listed = min(authenticated, 31)
            fields = {"version": 1, "headerAuthStatus": 1, "nmaStatus": status, "chainInForce": 3, "CPKS": 7,
                      "osnmaEnabled": enabled, "numSVs": listed, "nmaHeaderUpdate": 3, "timSyncEnabled": 1,
                      "timSyncStatus": sync, "timSyncReqDiff": 15, "authSVs": authenticated, "authNumTim": 63,
                      "timingAuthResult": 3}
            for n in range(1, listed + 1):
                fields["svId_%02d" % n] = n
                fields["authStatus_%02d" % n] = 1
            case("SEC-OSNMA", OSNMA, **fields)

# Frames for the framing tests, decoded like the others: payloads holding newlines, `$` and
# `B5 62` (a frame is read by its length, never split at them), the largest NAV-SIG (255
# signals, 4088 bytes), and an unknown message (class 0x01, id 0x99, no decoder) of the
# longest payload the reader takes, 8192 bytes, made with pyubx2's payload= and checksum.
case("NAV-STATUS", ("iTOW", "spoofDetState"), iTOW=0x0A240A24, spoofDetState=2, ttff=0x0D0A0D0A,
     msss=0x62B5240A)
fields = {"iTOW": 0x240A0A24, "version": 0, "numSigs": 255}
for n in range(1, 256):
    suffix = "_%02d" % n
    fields.update({"gnssId" + suffix: 2, "svId" + suffix: 0x0A if n % 2 else 0xB5, "sigId" + suffix: 0,
                   "freqId" + suffix: 0x62, "cno" + suffix: 0x24, "qualityInd" + suffix: 0x0A,
                   "authStatus" + suffix: n % 3 == 0})
parsed = case("NAV-SIG", ("iTOW", "numSigs"), **fields)
cases[-1]["fields"]["authStatus"] = [getattr(parsed, "authStatus_%02d" % n) for n in range(1, 256)]
longest = bytes((0x0A, 0x24, 0xB5, 0x62, 0x0D)[n % 5] for n in range(8192))
packet = UBXMessage(b"\x01", b"\x99", GET, payload=longest).serialize()
if len(packet) != 8200 or packet[6:-2] != longest:
    sys.exit("ubx-oracle: pyubx2 did not frame the 8192-byte payload")
cases.append({"message": "unknown", "hex": packet.hex(), "fields": {"class": packet[2], "id": packet[3]}})
# One byte past the limit, its checksum right: "over-limit", which the reader skips and counts
# (its payload holds no `B5 62`, each of which would be a frame to try once the sync is skipped).
packet = UBXMessage(b"\x01", b"\x99", GET, payload=b"\x00" * 8193).serialize()
cases.append({"message": "over-limit", "hex": packet.hex(), "fields": {"length": len(packet) - 8}})

for entry in cases:
    print(json.dumps(entry))
