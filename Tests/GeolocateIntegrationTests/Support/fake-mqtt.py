#!/usr/bin/env python3
"""fake-mqtt.py - an MQTT 5 and 3.1.1 broker on 127.0.0.1 that acknowledges only what it is told to.

Usage: fake-mqtt.py PORT_FILE LOG_FILE PLAN...

Each PLAN word is what one connection gets, in order; the last one is kept for every later
connection:
  ack      acknowledge every PUBLISH (PUBACK at QoS 1, PUBREC/PUBCOMP at QoS 2);
  ack:K    acknowledge the first K PUBLISHes of this connection, then none; end the
           connection (FIN, so every acknowledgement reaches the client) once 50 more
           arrived unacknowledged, or after 5 s without one;
  window:N MQTT 5: advertise Receive Maximum N in the CONNACK and acknowledge late: only
           once nothing more came for 50 ms, then every PUBLISH held, so a client that keeps
           to N stops at N unacknowledged and one that does not is seen with more;
           window:0 advertises nothing (3.1.1 connections: as ack);
  v3only   refuse MQTT 5 as a 3.1.1 broker does (CONNACK return code 1 in 3.1.1's form, then
           close); 3.1.1 connections: as ack;
  close-v5 close an MQTT 5 connection before any CONNACK; 3.1.1 connections: as ack;
  cut:K    acknowledge the first K PUBLISHes, then none, and drop the connection (no
           DISCONNECT) once 5 more arrived, or after 5 s without one;
  down     stop listening: later connections are refused.
Every PUBLISH received is a line of LOG_FILE: {"connection": n, "id": the payload's "id",
"acked": whether its acknowledgement was written to the socket, "version": 4 (3.1.1) or 5,
"property": its user property "id" or null, "expiry": its Message Expiry Interval or null,
"unacknowledged": how many PUBLISHes of the connection were unacknowledged with it, "dup": its
DUP flag, "packetId", "delivered": whether a broker that delivers QoS 2 messages on receipt
would deliver it now (QoS 2: a packet id its session does not hold yet; QoS 0 and 1: always)}.
Each CONNECT is a line {"connect": n, "version": 4 or 5, "client": its client id, "cleanStart",
"sessionExpiry": its Session Expiry Interval or null, "present": whether the CONNACK said a
session was resumed}; each DISCONNECT {"disconnect": n, "sessionExpiry": the interval it set,
or null}. Sessions are kept per client id across connections while their Session Expiry
Interval is above 0 (never timed out), with the QoS 2 packet ids received and not released.
The port is written to PORT_FILE once the broker listens.
"""
import json
import socket
import sys


def read_exactly(conn, count):
    data = b""
    while len(data) < count:
        chunk = conn.recv(count - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def read_packet(conn):
    """One MQTT packet: (type, flags, body)."""
    first = read_exactly(conn, 1)[0]
    length, shift = 0, 0
    while True:
        byte = read_exactly(conn, 1)[0]
        length |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    return first >> 4, first & 0x0F, read_exactly(conn, length)


def variable_integer(data, offset):
    """An MQTT variable byte integer at `offset`: (value, offset after it)."""
    value, shift = 0, 0
    while True:
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, offset


def properties(data):
    """MQTT 5 properties: the user property "id" and the Message Expiry Interval, when there."""
    found, offset = {}, 0
    while offset < len(data):
        identifier = data[offset]
        offset += 1
        if identifier == 0x26:  # user property: two strings
            strings = []
            for _ in range(2):
                length = int.from_bytes(data[offset:offset + 2], "big")
                strings.append(data[offset + 2:offset + 2 + length].decode())
                offset += 2 + length
            if strings[0] == "id":
                found["property"] = strings[1]
        elif identifier == 0x02:  # message expiry interval: four bytes
            found["expiry"] = int.from_bytes(data[offset:offset + 4], "big")
            offset += 4
        elif identifier in (0x01,):  # payload format indicator: a byte
            offset += 1
        elif identifier in (0x23,):  # topic alias: two bytes
            offset += 2
        elif identifier in (0x03, 0x08):  # content type, response topic: a string
            offset += 2 + int.from_bytes(data[offset:offset + 2], "big")
        elif identifier == 0x09:  # correlation data: binary
            offset += 2 + int.from_bytes(data[offset:offset + 2], "big")
        else:
            raise ValueError(f"property {identifier:#x} not understood")
    return found


def connect_properties(data):
    """The Session Expiry Interval of CONNECT or DISCONNECT properties, or None."""
    sizes = {0x11: 4, 0x21: 2, 0x27: 4, 0x22: 2, 0x19: 1, 0x17: 1}
    offset, expiry = 0, None
    while offset < len(data):
        identifier = data[offset]
        offset += 1
        if identifier == 0x11:
            expiry = int.from_bytes(data[offset:offset + 4], "big")
        if identifier in sizes:
            offset += sizes[identifier]
        elif identifier == 0x26:  # user property: two strings
            for _ in range(2):
                offset += 2 + int.from_bytes(data[offset:offset + 2], "big")
        elif identifier in (0x15, 0x16, 0x1F):  # authentication method and data, reason string
            offset += 2 + int.from_bytes(data[offset:offset + 2], "big")
        else:
            raise ValueError(f"property {identifier:#x} not understood")
    return expiry


def serve(conn, number, plan, log, sessions):
    window = int(plan.split(":")[1]) if plan.startswith("window:") else None
    acknowledging = int(plan.split(":")[1]) if plan.startswith(("ack:", "cut:")) else None
    received = acked = 0
    version = 4
    client, session = None, {"awaiting": set(), "expiry": 0}
    held = []  # window: (packet id, qos) of PUBLISHes not yet acknowledged, oldest first
    conn.settimeout(5)

    def acknowledge(packet_id, qos):
        conn.sendall((b"\x40\x02" if qos == 1 else b"\x50\x02") + packet_id)

    try:
        while True:
            if held:
                conn.settimeout(0.05)
                try:
                    kind, flags, body = read_packet(conn)
                except socket.timeout:
                    while held:
                        acknowledge(*held.pop(0))
                    continue
                finally:
                    conn.settimeout(5)
            else:
                kind, flags, body = read_packet(conn)
            if kind == 1:  # CONNECT
                version = body[6]
                clean = bool(body[7] & 0x02)
                offset, expiry = 10, None
                if version == 5:
                    length, offset = variable_integer(body, offset)
                    expiry = connect_properties(body[offset:offset + length])
                    offset += length
                client = body[offset + 2:offset + 2 + int.from_bytes(body[offset:offset + 2], "big")].decode()
                present = not clean and client in sessions
                session = sessions[client] if present else {"awaiting": set()}
                session["expiry"] = expiry or 0
                sessions[client] = session
                log.write(json.dumps({"connect": number, "version": version, "client": client, "cleanStart": clean,
                                      "sessionExpiry": expiry, "present": present}) + "\n")
                log.flush()
                if version == 5 and plan == "v3only":
                    conn.sendall(b"\x20\x02\x00\x01")
                    return
                if version == 5 and plan == "close-v5":
                    return
                if version == 5:
                    advertised = b"\x21" + window.to_bytes(2, "big") if window else b""
                    conn.sendall(bytes([0x20, 3 + len(advertised), int(present), 0, len(advertised)]) + advertised)
                else:
                    conn.sendall(bytes([0x20, 0x02, int(present), 0x00]))
            elif kind == 3:  # PUBLISH
                qos = (flags >> 1) & 3
                topic_length = int.from_bytes(body[:2], "big")
                offset = 2 + topic_length
                packet_id = body[offset:offset + 2] if qos else b""
                offset += 2 if qos else 0
                found = {}
                if version == 5:
                    length, start = variable_integer(body, offset)
                    found = properties(body[start:start + length])
                    offset = start + length
                payload = body[offset:]
                received += 1
                delivered = qos < 2 or packet_id not in session["awaiting"]
                if qos == 2:
                    session["awaiting"].add(packet_id)
                if window is not None and version == 5 and qos:
                    held.append((packet_id, qos))
                    answer = False
                else:
                    answer = acknowledging is None or acked < acknowledging
                if answer and qos == 1:
                    conn.sendall(b"\x40\x02" + packet_id)
                elif answer and qos == 2:
                    conn.sendall(b"\x50\x02" + packet_id)
                if answer:
                    acked += 1
                try:
                    record = json.loads(payload).get("id")
                except ValueError:
                    record = None
                log.write(json.dumps({"connection": number, "id": record, "acked": answer and qos > 0, "version": version,
                                      "property": found.get("property"), "expiry": found.get("expiry"),
                                      "unacknowledged": len(held), "dup": bool(flags & 8),
                                      "packetId": int.from_bytes(packet_id, "big") if qos else None, "delivered": delivered}) + "\n")
                log.flush()
                if plan.startswith("cut:") and received >= acknowledging + 5:
                    return
                if plan.startswith("ack:") and received >= acknowledging + 50:
                    # FIN after the acknowledgements, then drain: closing with unread data
                    # would send a reset, which may discard acknowledgements not yet read.
                    conn.shutdown(socket.SHUT_WR)
                    conn.settimeout(2)
                    while conn.recv(65536):
                        pass
                    return
            elif kind == 6:  # PUBREL
                session["awaiting"].discard(body[:2])
                conn.sendall(b"\x70\x02" + body[:2])
            elif kind == 12:  # PINGREQ
                conn.sendall(b"\xd0\x00")
            elif kind == 14:  # DISCONNECT
                expiry = None
                if version == 5 and len(body) > 1:
                    length, offset = variable_integer(body, 1)
                    expiry = connect_properties(body[offset:offset + length])
                if expiry is not None:
                    session["expiry"] = expiry
                log.write(json.dumps({"disconnect": number, "sessionExpiry": expiry}) + "\n")
                log.flush()
                return
    except (ConnectionError, socket.timeout, OSError):
        return
    finally:
        conn.close()
        if client is not None and session.get("expiry", 0) == 0:
            sessions.pop(client, None)


def main():
    port_file, log_file, plans = sys.argv[1], sys.argv[2], sys.argv[3:]
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(listener.getsockname()[1]))
    import os
    os.rename(port_file + ".tmp", port_file)
    with open(log_file, "a") as log:
        number, sessions = 0, {}
        while True:
            plan = plans[min(number, len(plans) - 1)]
            if plan == "down":
                listener.close()
                return
            conn, _ = listener.accept()
            number += 1
            serve(conn, number, plan, log, sessions)


main()
