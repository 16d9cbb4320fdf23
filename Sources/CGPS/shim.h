// libgps for GPSDSource.swift, the only Swift file that imports this module.
#ifndef GEOLOCATE_CGPS_SHIM_H
#define GEOLOCATE_CGPS_SHIM_H

#include <gps.h>

// GPSDSource reads gps_fix_t.time as a timespec and altHAE/altMSL (API 9 and later),
// gps_fix_t.status (API 10 and later) and the JSON-only socket interface of gpsd 3.22 (API 11,
// Debian bookworm) to 3.25 (API 14). Check those fields before widening this range.
#if !defined(GPSD_API_MAJOR_VERSION) || GPSD_API_MAJOR_VERSION < 11 || GPSD_API_MAJOR_VERSION > 14
#error "geolocate supports libgps API major versions 11 to 14 (gpsd 3.22 to 3.25); install libgps-dev from one of those"
#endif

// The mask and flag macros as typed constants, so Swift sees them whatever their spelling.
static const gps_mask_t geolocate_mode_set = MODE_SET;
static const gps_mask_t geolocate_time_set = TIME_SET;
static const unsigned int geolocate_watch_json = WATCH_ENABLE | WATCH_JSON;
static const int geolocate_mode_2d = MODE_2D;
static const int geolocate_mode_3d = MODE_3D;
static const int geolocate_status_simulated = STATUS_SIM;
static const int geolocate_status_manual = STATUS_TIME;
static const int geolocate_status_dead_reckoning = STATUS_DR;
static const int geolocate_status_gnss_dead_reckoning = STATUS_GNSSDR;
static const int geolocate_status_dgps = STATUS_DGPS_FIX;
static const int geolocate_status_rtk_fixed = STATUS_RTK_FIX;
static const int geolocate_status_rtk_float = STATUS_RTK_FLT;

// gps_send is variadic, which Swift does not import.
static inline int geolocate_send(struct gps_data_t *gpsdata, const char *command) {
    return gps_send(gpsdata, "%s", command);
}

#endif
