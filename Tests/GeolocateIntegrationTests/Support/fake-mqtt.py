#!/usr/bin/env python3
"""fake-mqtt.py - an MQTT 3.1.1 broker on 127.0.0.1 that acknowledges only what it is told to.

Usage: fake-mqtt.py PORT_FILE LOG_FILE PLAN...

Each PLAN word is what one connection gets, in order; the last one is kept for every later
connection:
  ack      acknowledge every PUBLISH (PUBACK at QoS 1, PUBREC/PUBCOMP at QoS 2);
  ack:K    acknowledge the first K PUBLISHes of this connection, then none; end the
           connection (FIN, so every acknowledgement reaches the client) once 50 more
           arrived unacknowledged, or after 5 s without one;
  down     stop listening: later connections are refused.
Every PUBLISH received is a line of LOG_FILE: {"connection": n, "id": the payload's "id",
"acked": whether its acknowledgement was written to the socket}. The port is written to
PORT_FILE once the broker listens.
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


def serve(conn, number, plan, log):
    acknowledging = None if plan == "ack" else int(plan.split(":")[1])
    received = acked = 0
    conn.settimeout(5)
    try:
        while True:
            kind, flags, body = read_packet(conn)
            if kind == 1:  # CONNECT
                conn.sendall(b"\x20\x02\x00\x00")
            elif kind == 3:  # PUBLISH
                qos = (flags >> 1) & 3
                topic_length = int.from_bytes(body[:2], "big")
                offset = 2 + topic_length
                packet_id = body[offset:offset + 2] if qos else b""
                payload = body[offset + (2 if qos else 0):]
                received += 1
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
                log.write(json.dumps({"connection": number, "id": record, "acked": answer and qos > 0}) + "\n")
                log.flush()
                if acknowledging is not None and received >= acknowledging + 50:
                    # FIN after the acknowledgements, then drain: closing with unread data
                    # would send a reset, which may discard acknowledgements not yet read.
                    conn.shutdown(socket.SHUT_WR)
                    conn.settimeout(2)
                    while conn.recv(65536):
                        pass
                    return
            elif kind == 6:  # PUBREL
                conn.sendall(b"\x70\x02" + body[:2])
            elif kind == 12:  # PINGREQ
                conn.sendall(b"\xd0\x00")
            elif kind == 14:  # DISCONNECT
                return
    except (ConnectionError, socket.timeout, OSError):
        return
    finally:
        conn.close()


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
        number = 0
        while True:
            plan = plans[min(number, len(plans) - 1)]
            if plan == "down":
                listener.close()
                return
            conn, _ = listener.accept()
            number += 1
            serve(conn, number, plan, log)


main()
