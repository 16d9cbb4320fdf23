#!/usr/bin/env python3
"""fresh-nmea.py LOG SECONDS [START]: LOG's epochs again and again for SECONDS, dated from START
(epoch seconds, default now) on, one epoch a second, checksums made anew.

A recorded log is dated the day it was recorded, so anything judging a fix's age (a login
gate, status --check) finds it old; this is the same receiver output as if it were live.
Times are rewritten in GGA, RMC (and its date), GLL and ZDA; other sentences pass as they are.
"""
import datetime, functools, sys


def checksum(body):
    return "%02X" % functools.reduce(lambda a, c: a ^ ord(c), body, 0)


def epochs(path):
    """The log's sentences grouped by epoch: a new epoch starts at each GGA."""
    groups, current = [], []
    for line in open(path):
        line = line.strip()
        if not line.startswith("$"):
            continue
        if line[3:6] == "GGA" and current:
            groups.append(current)
            current = []
        current.append(line.split("*")[0][1:])
    if current:
        groups.append(current)
    return groups


def dated(body, when):
    fields = body.split(",")
    kind = fields[0][2:]
    time = when.strftime("%H%M%S.00")
    if kind in ("GGA", "RMC", "ZDA"):
        fields[1] = time
    if kind == "RMC":
        fields[9] = when.strftime("%d%m%y")
    if kind == "GLL":
        fields[5] = time
    if kind == "ZDA":
        fields[2:5] = [when.strftime("%d"), when.strftime("%m"), when.strftime("%Y")]
    body = ",".join(fields)
    return "$%s*%s" % (body, checksum(body))


def main(log, seconds, start=None):
    start = datetime.datetime.fromtimestamp(int(float(start)) if start else int(datetime.datetime.now().timestamp()),
                                            tz=datetime.timezone.utc)
    groups = epochs(log)
    out = sys.stdout
    for index in range(int(seconds)):
        when = start + datetime.timedelta(seconds=index)
        for body in groups[index % len(groups)]:
            out.write(dated(body, when) + "\r\n")


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(*sys.argv[1:])
