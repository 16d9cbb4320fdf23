// The program's standard descriptors are made safe to use by a constructor in
// standard_streams.c, before main: there is nothing to call.
#ifndef GEOLOCATE_STANDARD_STREAMS_H
#define GEOLOCATE_STANDARD_STREAMS_H
#endif
