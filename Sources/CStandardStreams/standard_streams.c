// Standard descriptors a caller closed are opened on /dev/null before anything else runs, as
// OpenSSH's sanitise_stdfd does: otherwise the first file or epoll instance the process opens
// takes the number, and output meant for stdout goes into it (track used to wait forever for
// an epoll descriptor to become writable). Output descriptors are opened read-only, so a write
// to a closed stdout still fails (EBADF: exit 74), as it does for `1</dev/null`.
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

__attribute__((constructor)) static void geolocate_open_closed_standard_streams(void) {
    for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        // The lowest free number is this one: the lower ones are open by now.
        int opened = open("/dev/null", O_RDONLY);
        if (opened >= 0 && opened != fd) close(opened);
    }
}
