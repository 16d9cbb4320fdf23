#!/usr/bin/env python3
"""collector.py - a real HTTP collector on 127.0.0.1 for geolocate's delivery tests.

Usage: collector.py RULES.json LOG.jsonl PORTFILE [--tls-cert CERT --tls-key KEY [--tls-client-ca CA]]

It listens on a free loopback port, writes the port to PORTFILE, and answers each POST by the
rules in RULES.json, which it rereads on every request so a test can change them mid-run.
With --tls-cert and --tls-key it speaks HTTPS with that certificate (PEM); with
--tls-client-ca too, it requires a client certificate signed by that CA. A handshake that
fails is logged as {"tls": "handshake failed", "reason": ...}, nothing else of it.

  {"/path": {"script": [{"status": 500}, {"status": 429, "retryAfter": "1"},
                        {"delay": 2.0, "status": 200}, {"close": true}],
             "poison": ["ID", ...], "default": {"status": 200}}}

"script" entries are used one per request, in order (from the start again whenever the rules
change), then "default" (200). A request whose
records include a "poison" id gets 400. "close" drops the connection without an answer.
"location" adds a Location header (for redirects); "trickle": [chunks, seconds] sends the
body chunked, 4 bytes at a time, `chunks` times, `seconds` apart.
Every request is appended to LOG.jsonl when it arrives: its number "n", path, status,
Idempotency-Key, the record ids in the body (OpenLocate {"locations":[...]} or NDJSON) and
the body, whatever the answer will be. Once the answer's status line and headers have been
written to the socket, {"n": n, "sent": true} is appended: only then was a 2xx really sent.

A GET of /reverse answers as a Nominatim server does (/reverse?format=jsonv2&lat=&lon=): the
nearest of the rules' "/reverse" "places" ([{"lat", "lon", "road", "house_number", "city",
"country_code"}]) within 1 km, else {"error": "Unable to geocode"}; "script" and "default"
work as for POST. The log entry has the query parameters under "query", and the method and
request-target as sent under "method" and "target".
"""
import argparse
import json
import math
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl

RULES, LOG, PORTFILE = sys.argv[1:4]
options = argparse.ArgumentParser()
options.add_argument("--tls-cert")
options.add_argument("--tls-key")
options.add_argument("--tls-client-ca")
options = options.parse_args(sys.argv[4:])
TLS = None
if options.tls_cert:
    TLS = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    TLS.load_cert_chain(options.tls_cert, options.tls_key)
    if options.tls_client_ca:
        TLS.verify_mode = ssl.CERT_REQUIRED
        TLS.load_verify_locations(options.tls_client_ca)
lock = threading.Lock()
used = {}
counter = [0]
seen_rules = [None]


def record_ids(body):
    text = body.decode("utf-8", "replace").strip()
    try:
        document = json.loads(text)
        if isinstance(document, dict) and "locations" in document:
            return [item.get("id") for item in document["locations"]]
        if isinstance(document, dict):
            return [document.get("id")]
    except ValueError:
        pass
    ids = []
    for line in text.splitlines():
        try:
            ids.append(json.loads(line).get("id"))
        except ValueError:
            ids.append(None)
    return ids


def linger(connection):
    """Ends a connection whose TLS handshake failed as servers do: the alert already sent,
    no more writes, and the client's bytes read until it closes (at most 5 s), so that no
    reset overtakes the alert on its way to the client."""
    try:
        connection.shutdown(socket.SHUT_WR)
        connection.settimeout(5)
        while socket.socket.recv(connection, 4096):
            pass
    except OSError:
        pass


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def setup(self):
        self.handshake_failed = False
        if TLS is not None:
            try:
                self.request.do_handshake()
            except (ssl.SSLError, OSError) as error:
                self.handshake_failed = True
                with lock:
                    with open(LOG, "a") as f:
                        f.write(json.dumps({"tls": "handshake failed", "reason": str(error)}) + "\n")
                linger(self.request)
        super().setup()

    def handle(self):
        if not self.handshake_failed:
            super().handle()

    def finish(self):
        try:
            super().finish()
        except OSError:
            pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        ids = record_ids(body)
        path, _, query_text = self.path.partition("?")
        self.answer(path, ids, dict(parse_qsl(query_text)), None, body)

    def do_GET(self):
        path, _, query_text = self.path.partition("?")
        query = dict(parse_qsl(query_text))
        self.answer(path, [], query, lambda rules: nominatim(rules, query), b"")

    def answer(self, path, ids, query, make_payload, body):
        with lock:
            try:
                with open(RULES) as f:
                    text = f.read()
                rules = json.loads(text).get(path, {})
            except (OSError, ValueError):
                text, rules = None, {}
            if text != seen_rules[0]:
                seen_rules[0] = text
                used.clear()
            index = used.get(path, 0)
            used[path] = index + 1
            script = rules.get("script", [])
            answer = script[index] if index < len(script) else rules.get("default", {"status": 200})
            if set(ids) & set(rules.get("poison", [])):
                answer = {"status": 400}
            counter[0] += 1
            number = counter[0]
            entry = {"n": number, "method": self.command, "target": self.path, "path": path, "query": query, "status": answer.get("status"), "close": bool(answer.get("close")),
                     "key": self.headers.get("Idempotency-Key"), "type": self.headers.get("Content-Type"),
                     "ids": ids, "body": body.decode("utf-8", "replace"), "headers": {k: v for k, v in self.headers.items()}, "time": time.time()}
            with open(LOG, "a") as f:
                f.write(json.dumps(entry) + "\n")
        if answer.get("delay"):
            time.sleep(answer["delay"])
        if answer.get("close"):
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        payload = b'{"ok":true}' if answer.get("status", 200) < 300 else b'{"error":"scripted"}'
        if make_payload and answer.get("status", 200) == 200:
            payload = json.dumps(make_payload(rules)).encode()
        self.send_response(answer.get("status", 200))
        if "retryAfter" in answer:
            self.send_header("Retry-After", str(answer["retryAfter"]))
        if "location" in answer:
            self.send_header("Location", answer["location"])
        self.send_header("Content-Type", "application/json")
        if "trickle" in answer:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            self.note_sent(number)
            chunks, seconds = answer["trickle"]
            try:
                for _ in range(chunks):
                    self.wfile.write(b"4\r\nxxxx\r\n")
                    self.wfile.flush()
                    time.sleep(seconds)
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                pass
            return
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()
        self.note_sent(number)

    def note_sent(self, number):
        with lock:
            with open(LOG, "a") as f:
                f.write(json.dumps({"n": number, "sent": True}) + "\n")


def nominatim(rules, query):
    """A Nominatim jsonv2 reverse answer from the scripted places."""
    try:
        lat, lon = float(query["lat"]), float(query["lon"])
    except (KeyError, ValueError):
        return {"error": {"code": 400, "message": "Parameter 'lat' / 'lon' missing"}}
    def metres(place):
        dlat = math.radians(place["lat"] - lat)
        dlon = math.radians(place["lon"] - lon) * math.cos(math.radians(lat))
        return 6371000 * math.hypot(dlat, dlon)
    places = sorted(rules.get("places", []), key=metres)
    if not places or metres(places[0]) > 1000:
        return {"error": "Unable to geocode"}
    place = places[0]
    address = {key: place[key] for key in ("house_number", "road", "city", "country_code") if key in place}
    return {"place_id": 1, "licence": "Data (c) OpenStreetMap contributors, ODbL 1.0", "osm_type": "way",
            "osm_id": 1, "lat": str(place["lat"]), "lon": str(place["lon"]), "category": "building",
            "type": "yes", "place_rank": 30, "importance": 0, "addresstype": "building", "name": "",
            "display_name": ", ".join(str(v) for v in address.values()), "address": address,
            "boundingbox": [str(place["lat"]), str(place["lat"]), str(place["lon"]), str(place["lon"])]}


class Server(ThreadingHTTPServer):
    def get_request(self):
        connection, address = super().get_request()
        if TLS is not None:
            # The handshake is the handler thread's, so one stalled client stalls nobody else.
            connection = TLS.wrap_socket(connection, server_side=True, do_handshake_on_connect=False)
        return connection, address


server = Server(("127.0.0.1", 0), Handler)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os
os.rename(PORTFILE + ".tmp", PORTFILE)
server.serve_forever()
