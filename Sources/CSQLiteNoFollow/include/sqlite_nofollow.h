// A SQLite VFS that never follows a symbolic link to a database, for the spool and the
// geocoder cache (NoFollowVFS.swift): GRDB opens databases by path and gives no way to pass
// SQLITE_OPEN_NOFOLLOW, and SQLite resolves links in a database's path before it opens it.
#ifndef GEOLOCATE_SQLITE_NOFOLLOW_H
#define GEOLOCATE_SQLITE_NOFOLLOW_H

/// The VFS's name, for a `file:` URI's `vfs=` parameter.
extern const char *const geolocate_nofollow_vfs_name;

/// Registers the VFS (once; later calls do nothing): SQLite's "unix" VFS whose path
/// resolution fails with SQLITE_CANTOPEN_SYMLINK where any part of the path is a link, as
/// SQLITE_OPEN_NOFOLLOW makes it; and makes the unix VFSes' open(2) refuse a FIFO or socket
/// instead of waiting on it. Returns SQLite's result code (0, SQLITE_OK, on success).
int geolocate_register_nofollow_vfs(void);

#endif
