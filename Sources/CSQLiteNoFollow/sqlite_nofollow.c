#include "sqlite_nofollow.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const geolocate_nofollow_vfs_name = "geolocate-nofollow";

/// SQLite's own "unix" VFS, which every method but path resolution is.
static sqlite3_vfs *unix_vfs;
static sqlite3_vfs nofollow_vfs;
static int registration = SQLITE_ERROR;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/// The unix VFS's resolution, with a link anywhere in the path refused: SQLite reports a
/// resolved link as SQLITE_OK_SYMLINK, which its pager turns into SQLITE_CANTOPEN_SYMLINK
/// under SQLITE_OPEN_NOFOLLOW, and into a followed link otherwise.
static int full_pathname(sqlite3_vfs *vfs, const char *name, int size, char *out) {
    (void)vfs;
    int result = unix_vfs->xFullPathname(unix_vfs, name, size, out);
    return result == SQLITE_OK_SYMLINK ? SQLITE_CANTOPEN_SYMLINK : result;
}

/// SQLite's open(2), never blocking on a FIFO: a database opened for reading waits in open(2)
/// for a writer if it is a FIFO (one the directory's owner swapped in after geolocate judged
/// the file), so every file is opened without blocking, a FIFO or socket refused, and the
/// descriptor made blocking again as SQLite expects.
static int open_without_waiting(const char *path, int flags, int mode) {
    int fd = open(path, flags | O_NONBLOCK, (mode_t)mode);
    if (fd < 0) return fd;
    struct stat info;
    if (fstat(fd, &info) != 0 || S_ISFIFO(info.st_mode) || S_ISSOCK(info.st_mode)) {
        close(fd);
        errno = ENXIO;
        return -1;
    }
    if (!(flags & O_NONBLOCK)) {
        int status = fcntl(fd, F_GETFL);
        if (status == -1 || fcntl(fd, F_SETFL, status & ~O_NONBLOCK) == -1) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

static void register_once(void) {
    unix_vfs = sqlite3_vfs_find("unix");
    if (unix_vfs == 0) return;
    // A copy, so pAppData (the unix VFS's locking-style finder) stays what its methods expect.
    nofollow_vfs = *unix_vfs;
    nofollow_vfs.pNext = 0;
    nofollow_vfs.zName = geolocate_nofollow_vfs_name;
    nofollow_vfs.xFullPathname = full_pathname;
    // The unix VFSes share one table of system calls: every database of the process is then
    // opened this way (the spool, the geocoder cache, export's own temporary one).
    if (unix_vfs->iVersion >= 3 && unix_vfs->xSetSystemCall != 0) {
        int result = unix_vfs->xSetSystemCall(unix_vfs, "open", (sqlite3_syscall_ptr)open_without_waiting);
        if (result != SQLITE_OK) return;
    }
    registration = sqlite3_vfs_register(&nofollow_vfs, 0);
}

int geolocate_register_nofollow_vfs(void) {
    pthread_once(&once, register_once);
    return registration;
}
