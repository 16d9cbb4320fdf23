// The kernel's view of the system clock, for the core's SystemClock (WallClock.swift):
// adjtimex(2) is not in Swift's Glibc module.
#ifndef GEOLOCATE_SYSTEM_CLOCK_H
#define GEOLOCATE_SYSTEM_CLOCK_H

/// 1 when the kernel says the clock is synchronised (adjtimex: not TIME_ERROR, STA_UNSYNC
/// clear, as timedatectl's "System clock synchronized"), 0 when not, -1 when it cannot tell.
int geolocate_clock_synchronized(void);

#endif
