#include "sqlite_nofollow.h"

#include <pthread.h>
#include <sqlite3.h>

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

static void register_once(void) {
    unix_vfs = sqlite3_vfs_find("unix");
    if (unix_vfs == 0) return;
    // A copy, so pAppData (the unix VFS's locking-style finder) stays what its methods expect.
    nofollow_vfs = *unix_vfs;
    nofollow_vfs.pNext = 0;
    nofollow_vfs.zName = geolocate_nofollow_vfs_name;
    nofollow_vfs.xFullPathname = full_pathname;
    registration = sqlite3_vfs_register(&nofollow_vfs, 0);
}

int geolocate_register_nofollow_vfs(void) {
    pthread_once(&once, register_once);
    return registration;
}
