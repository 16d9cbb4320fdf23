import Foundation
import GeolocateModel
import GeolocateSpool
import class GRDB.DatabaseQueue
import struct GRDB.DatabaseError
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// SQLite opened through `NoFollowDatabase`: what the service user could swap in after
/// geolocate judged a database file (a link or a FIFO, between `OpenDirectory`'s check and
/// SQLite's own open by path) is refused by SQLite itself, and the file a link names is
/// neither made nor changed; SQL the user planted in the spool never runs.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct NoFollowDatabaseTests {
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

    /// SQLite's own refusal is geolocate's (`stateFileRefused`, 73), not "unable to open".
    @Test func sqlitesRefusalOfALinkIsRecognised() throws {
        #expect(symlink(state + "-elsewhere.sqlite", state + "/spool.sqlite") == 0)
        let directory = try #require(try OpenDirectory.open(state, create: false))
        do {
            _ = try DatabaseQueue(path: NoFollowDatabase.uri("spool.sqlite", in: directory))
            Issue.record("opened through a link")
        } catch let error as DatabaseError {
            #expect(NoFollowDatabase.refusedALink(error), "\(error)")
        }
    }

    /// A database opened for reading waits in open(2) for a writer when it is a FIFO: refused
    /// at once instead (status and export, root's included, would hang for ever).
    @Test(arguments: [[], ["mode=ro"], ["immutable=1"]])
    func aFIFOSwappedInIsRefusedWithoutWaiting(_ query: [String]) throws {
        #expect(mkfifo(state + "/spool.sqlite", 0o600) == 0)
        let directory = try #require(try OpenDirectory.open(state, create: false))
        #expect(throws: (any Error).self) {
            try DatabaseQueue(path: NoFollowDatabase.uri("spool.sqlite", in: directory, query: query))
                .read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM sqlite_master") }
        }
    }

    /// A trigger the directory's owner adds to the spool would run its SQL in root's process
    /// at the next insert: the spool is refused instead, before anything is written.
    @Test func aPlantedTriggerIsRefusedBeforeItRuns() throws {
        _ = try Spool(stateDirectory: state, clock: FixedClock(1_795_348_800_000))
        try DatabaseQueue(path: state + "/spool.sqlite").write {
            try $0.execute(sql: "CREATE TABLE planted (x); CREATE TRIGGER t AFTER INSERT ON records BEGIN INSERT INTO planted VALUES (1); END")
        }
        #expect(throws: GeolocateError.stateFileRefused(path: state + "/spool.sqlite",
                                                        reason: "it holds a trigger or view (t) that geolocate never makes")) {
            _ = try Spool(stateDirectory: state, clock: FixedClock(1_795_348_800_000))
        }
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
