#!/usr/bin/env python3
"""Writes the logs of manual input and simulator output that no corpus log has with a time.

Each is six epochs of nmea-gen.py (seed 1) with one word of the receiver changed: GGA quality
7 (manual) or 8 (simulator), the RMC mode letter M or S, or both, or an undefined quality and
letter (9, X); the *only logs keep just the RMC. gpsd 3.22's reading of each is beside it (shared/tools/gpsd-oracle.sh NAME.log).

    python3 make-logs.py ../../../../../shared/tools/nmea-gen.py
    ../../../../../shared/tools/gpsd-oracle.sh *.log
"""
import subprocess
import sys


def checksum(body):
    value = 0
    for character in body:
        value ^= ord(character)
    return "%02X" % value


def edited(line, kind, index, value):
    body = line[1:].split("*")[0]
    fields = body.split(",")
    if fields[0].endswith(kind):
        fields[index] = value
    body = ",".join(fields)
    return "$" + body + "*" + checksum(body)


base = subprocess.run([sys.executable, sys.argv[1], "--epochs", "6", "--seed", "1", "--quiet"],
                      check=True, capture_output=True, text=True).stdout.splitlines()
logs = {
    "gga7": [("GGA", 6, "7")], "gga8": [("GGA", 6, "8")],
    "rmcM": [("RMC", 12, "M")], "rmcS": [("RMC", 12, "S")],
    "gga7rmcM": [("GGA", 6, "7"), ("RMC", 12, "M")], "gga8rmcS": [("GGA", 6, "8"), ("RMC", 12, "S")],
    # A quality and a mode letter no standard defines: gpsd reports a plain fix.
    "gga9rmcX": [("GGA", 6, "9"), ("RMC", 12, "X")],
}
for name, edits in logs.items():
    lines = []
    for line in base:
        for kind, index, value in edits:
            line = edited(line, kind, index, value)
        lines.append(line)
    with open(name + ".log", "w", newline="") as out:
        out.write("".join(line + "\r\n" for line in lines))
    if name in ("rmcM", "rmcS"):
        with open(name + "only.log", "w", newline="") as out:
            out.write("".join(line + "\r\n" for line in lines if line[3:6] == "RMC"))
