#!/usr/bin/env python3
"""policy-oracle.py - where points lie relative to GeoJSON zones, computed independently of
geolocate with pyproj (geodesics, azimuthal equidistant projection) and shapely.

stdin: {"zones": "FILE.geojson", "points": [[lat, lon], ...]}
stdout: [[{"zone": NAME, "inside": bool, "boundaryDistance": metres}, ...] per point]
Each point is the centre of its own azimuthal equidistant projection (exact distances from
it); a Point zone with a "radius" is a geodesic circle.
"""
import json
import sys

from pyproj import Geod, Transformer
from shapely.geometry import Point, Polygon

geod = Geod(ellps="WGS84")
request = json.load(sys.stdin)
with open(request["zones"]) as handle:
    features = json.load(handle)["features"]

results = []
for lat, lon in request["points"]:
    project = Transformer.from_crs("EPSG:4326", f"+proj=aeqd +lat_0={lat} +lon_0={lon} +datum=WGS84 +units=m", always_xy=True)
    origin = Point(0, 0)
    row = []
    for feature in features:
        name = feature["properties"]["name"]
        geometry = feature["geometry"]
        if geometry["type"] == "Point":
            clon, clat = geometry["coordinates"]
            _, _, distance = geod.inv(lon, lat, clon, clat)
            radius = feature["properties"]["radius"]
            row.append({"zone": name, "inside": distance <= radius, "boundaryDistance": abs(radius - distance)})
            continue
        polygons = geometry["coordinates"] if geometry["type"] == "MultiPolygon" else [geometry["coordinates"]]
        shapes = []
        for rings in polygons:
            projected = [[project.transform(x, y) for x, y in ring] for ring in rings]
            shapes.append(Polygon(projected[0], projected[1:]))
        inside = any(shape.contains(origin) for shape in shapes)
        distance = min(shape.boundary.distance(origin) for shape in shapes)
        row.append({"zone": name, "inside": inside, "boundaryDistance": distance})
    results.append(row)
json.dump(results, sys.stdout)
