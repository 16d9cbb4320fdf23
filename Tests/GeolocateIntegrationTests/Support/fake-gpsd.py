#!/usr/bin/env python3
"""fake-gpsd.py - a scripted gpsd on 127.0.0.1 for geolocate's source tests.

Usage: fake-gpsd.py SCRIPT.json LOG.jsonl PORTFILE

Real gpsd cannot be made to report an out-of-range or future-dated fix, so this speaks just
enough of gpsd's JSON protocol (https://gpsd.gitlab.io/gpsd/gpsd_json.html) for libgps to
report what SCRIPT.json says. It listens on a free loopback port, writes the port to PORTFILE,
and serves each client by the script:

  {"greeting": true,            # send gpsd 3.22's VERSION object on connect (default true)
   "silent": false,             # accept the connection, then never write anything (default false)
   "pollSilent": false,         # never answer ?POLL; (gpsd opening a device, or hung)
   "poll": [TPV, ...],          # the "tpv" list of the POLL object answering ?POLL;
   "stream": [TPV, ...],        # TPVs sent after ?WATCH=...;, one every "interval" seconds
   "raw": ["text", ...],        # lines sent as they are after ?WATCH=...;, before the stream
   "interval": 0.05,
   "closeAfterStream": false,  # close the connection once the stream is sent (a flapping gpsd)
   "driver": "NMEA0183",       # the driver DEVICES names ("u-blox": geolocate waits for UBX)
   "rawFlood": false}          # answer a raw watch (?WATCH={..."raw":2}) with endless B5 62

A TPV is written as given, after {"class":"TPV","device":"/dev/fake",...}. With "silent" the
client gets nothing, not even the VERSION greeting, whatever it sends. Every command received
is appended to LOG.jsonl as {"command": "..."}; a flood, as {"event": "flood", "bytes": N}
when its connection ends.
"""
import json
import os
import socket
import sys
import threading
import time

SCRIPT, LOG, PORTFILE = sys.argv[1:4]
DEVICE = "/dev/fake"
lock = threading.Lock()


def load_script():
    with open(SCRIPT, encoding="utf-8") as f:
        return json.load(f)


def log(entry):
    with lock, open(LOG, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")


def tpv(fields):
    report = {"class": "TPV", "device": DEVICE}
    report.update(fields)
    return report


def send(conn, obj):
    conn.sendall((json.dumps(obj, separators=(",", ":")) + "\r\n").encode())


def now_iso():
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % (int(t * 1000) % 1000)


def stream(conn, script, stop):
    for line in script.get("raw", []):
        try:
            conn.sendall(line.encode("utf-8", "surrogateescape") + b"\r\n")
        except OSError:
            return
    for fields in script.get("stream", []):
        if stop.is_set():
            return
        try:
            send(conn, tpv(fields))
        except OSError:
            return
        time.sleep(script.get("interval", 0.05))
    if script.get("closeAfterStream"):
        try:
            conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def flood(conn, stop):
    """Sync bytes and nothing else, as fast as the client reads them: every B5 62 starts a
    frame that is never whole."""
    chunk = b"\xb5\x62" * 8192
    sent = 0
    try:
        while not stop.is_set():
            conn.sendall(chunk)
            sent += len(chunk)
    except OSError:
        pass
    log({"event": "flood", "bytes": sent, "time": time.monotonic()})


def serve(conn):
    script = load_script()
    stop = threading.Event()
    log({"event": "connected", "time": time.monotonic()})
    try:
        if not script.get("silent") and script.get("greeting", True):
            send(conn, {"class": "VERSION", "release": "3.22", "rev": "3.22",
                        "proto_major": 3, "proto_minor": 14})
        buffer = b""
        while True:
            data = conn.recv(4096)
            if not data:
                log({"event": "closed", "time": time.monotonic()})
                return
            buffer += data
            # Commands end with ";" (libgps sends "?WATCH={...};" and "?POLL;").
            while b";" in buffer:
                command, buffer = buffer.split(b";", 1)
                command = command.decode("utf-8", "replace").strip()
                log({"command": command})
                if script.get("silent"):
                    continue
                if command.startswith("?WATCH") and '"raw":2' in command.replace(" ", "") and script.get("rawFlood"):
                    threading.Thread(target=flood, args=(conn, stop), daemon=True).start()
                elif command.startswith("?WATCH"):
                    send(conn, {"class": "DEVICES", "devices": [
                        {"class": "DEVICE", "path": DEVICE, "driver": script.get("driver", "NMEA0183"), "activated": now_iso(),
                         "flags": 1, "native": 0, "bps": 4800, "parity": "N", "stopbits": 1,
                         "cycle": 1.00}]})
                    send(conn, {"class": "WATCH", "enable": True, "json": True, "nmea": False,
                                "raw": 0, "scaled": False, "timing": False, "split24": False,
                                "pps": False})
                    threading.Thread(target=stream, args=(conn, script, stop), daemon=True).start()
                elif command.startswith("?POLL") and not script.get("pollSilent"):
                    send(conn, {"class": "POLL", "time": now_iso(), "active": 1,
                                "tpv": [tpv(fields) for fields in script.get("poll", [])], "sky": []})
    except OSError:
        pass
    finally:
        stop.set()
        conn.close()


def main():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    with open(PORTFILE + ".tmp", "w", encoding="utf-8") as f:
        f.write(str(server.getsockname()[1]))
    os.rename(PORTFILE + ".tmp", PORTFILE)
    while True:
        conn, _ = server.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
