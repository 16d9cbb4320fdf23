import Foundation
import GeolocateModel
import GeolocateSpool
import class GRDB.DatabaseQueue
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// SQLite opened through `NoFollowDatabase`: what the service user could swap in after
/// geolocate judged a database file (a link, between `OpenDirectory`'s check and SQLite's own
/// open by path) is refused by SQLite itself, and the file it names is neither made nor changed.
@Suite(.tags(.unit), .timeLimit(.minutes(20))) struct NoFollowDatabaseTests {
    let state: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("nofollow-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    @Test func aDatabaseOpensAndKeepsItsRowsThroughTheVFS() throws {
        let directory = try #require(try OpenDirectory.open(state, create: false))
        let uri = NoFollowDatabase.uri("spool.sqlite", in: directory)
        #expect(uri.hasPrefix("file:/") && uri.contains("vfs=geolocate-nofollow"), "\(uri)")
        try DatabaseQueue(path: uri).write { try $0.execute(sql: "CREATE TABLE t (x); INSERT INTO t VALUES (1)") }
        let count = try DatabaseQueue(path: NoFollowDatabase.uri("spool.sqlite", in: directory, query: ["mode=ro"]))
            .read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM t") }
        #expect(count == 1)
    }

    @Test func aLinkSwappedInIsNotFollowedToMakeADatabaseElsewhere() throws {
        let elsewhere = state + "-elsewhere.sqlite"
        #expect(symlink(elsewhere, state + "/spool.sqlite") == 0)
        let directory = try #require(try OpenDirectory.open(state, create: false))
        #expect(throws: (any Error).self) { try DatabaseQueue(path: NoFollowDatabase.uri("spool.sqlite", in: directory)) }
        #expect(!FileManager.default.fileExists(atPath: elsewhere), "SQLite made the file the link names")
    }

    @Test func aLinkToAnExistingDatabaseIsNotWrittenNorRead() throws {
        let elsewhere = state + "-other.sqlite"
        try DatabaseQueue(path: elsewhere).write { try $0.execute(sql: "CREATE TABLE secret (x); INSERT INTO secret VALUES ('root')") }
        let before = try #require(FileManager.default.contents(atPath: elsewhere))
        #expect(symlink(elsewhere, state + "/spool.sqlite") == 0)
        let directory = try #require(try OpenDirectory.open(state, create: false))
        for query in [[], ["mode=ro"], ["immutable=1"]] {
            #expect(throws: (any Error).self, "\(query)") {
                try DatabaseQueue(path: NoFollowDatabase.uri("spool.sqlite", in: directory, query: query))
                    .read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM secret") }
            }
        }
        #expect(FileManager.default.contents(atPath: elsewhere) == before)
    }

    /// The directory is named as the kernel names it, so a link on the way to a state
    /// directory (a user's `~/.local/state` on another disk) does not make its databases fail.
    @Test func aStateDirectoryReachedThroughALinkStillOpens() throws {
        let linked = state + "-link"
        #expect(symlink(state, linked) == 0)
        let directory = try #require(try OpenDirectory.open(linked, create: false))
        try DatabaseQueue(path: NoFollowDatabase.uri("cache.sqlite", in: directory)).write { try $0.execute(sql: "CREATE TABLE t (x)") }
        #expect(FileManager.default.fileExists(atPath: state + "/cache.sqlite"))
    }
}
