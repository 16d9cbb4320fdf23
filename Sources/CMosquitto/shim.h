// libmosquitto for MosquittoTransport.swift, the only Swift file that imports this module.
#ifndef GEOLOCATE_CMOSQUITTO_SHIM_H
#define GEOLOCATE_CMOSQUITTO_SHIM_H

#include <mosquitto.h>
// MQTT 5's protocol version, property identifiers and reason codes.
#include <mqtt_protocol.h>

// MosquittoTransport uses the 2.x client API: MQTT 5 (MOSQ_OPT_PROTOCOL_VERSION,
// mosquitto_publish_v5 with properties, the v5 publish callback's reason code), mosquitto_int_option with MOSQ_OPT_SEND_MAXIMUM,
// MOSQ_OPT_TCP_NODELAY and MOSQ_OPT_TLS_USE_OS_CERTS (2.0), and the 1.x calls it kept (Debian
// bookworm ships 2.0.11). Check those before widening this range.
#if !defined(LIBMOSQUITTO_MAJOR) || LIBMOSQUITTO_MAJOR != 2
#error "geolocate supports libmosquitto 2.x; install libmosquitto-dev from mosquitto 2.0 or later"
#endif

#endif
