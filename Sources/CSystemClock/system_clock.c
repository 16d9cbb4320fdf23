#include "system_clock.h"
#include <sys/timex.h>

int geolocate_clock_synchronized(void) {
    struct timex state = {0};
    int result = adjtimex(&state);
    if (result < 0) return -1;
    return (result != TIME_ERROR && (state.status & STA_UNSYNC) == 0) ? 1 : 0;
}
