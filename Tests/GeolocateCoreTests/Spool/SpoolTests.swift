import Foundation
import GeolocateCore
import Testing

/// The SQLite spool on real files: appends, dedupe, retention, group commit, concurrent writers.
@Suite struct SpoolTests {
    let state = FileManager.default.temporaryDirectory.appendingPathComponent("spool-\(UUID().uuidString)").path
    static let now: Int64 = 1_795_348_800_000

    func record(ageMilliseconds: Int64) -> Record {
        let fix = Fix(timestamp: Self.now - ageMilliseconds, latitude: 53, longitude: -6, mode: .threeD, provider: .gpsd)
        return Record(action: "track", triggeredAt: Self.now, requestedMode: "force-current", collectionMode: "force-current",
                      fix: fix, permissions: [.fine], origin: .current, fallbackReason: nil, errorCode: .none, context: .regular)
    }

    @Test func appendKeepsOrderAcrossTransactionsAndOpenings() throws {
        let spool = try Spool(stateDirectory: state)
        let records = (0..<5).map { _ in record(ageMilliseconds: 1000) }
        try spool.append(records[0..<2].map { SpoolEntry($0) }, now: Self.now, limits: SpoolLimits())
        try spool.append(records[2...].map { SpoolEntry($0) }, now: Self.now, limits: SpoolLimits())
        #expect(try spool.count() == 5)
        #expect(try spool.bodies() == records.map { MosaicRecord($0).jsonLine() })
        #expect(try Spool(stateDirectory: state).count() == 5)
    }

    /// A spool written by an earlier version (`Fixtures/spool-v1`, see its README) opens
    /// with every record, destination and cursor kept: the baseline the typed-records
    /// migration must keep passing.
    @Test func aSpoolFromAnEarlierVersionKeepsEverything() throws {
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: TestPaths.fixture("spool-v1/spool.sqlite"),
                                         to: URL(fileURLWithPath: state + "/spool.sqlite"))
        let expected = try String(contentsOf: TestPaths.fixture("spool-v1/records.ndjson"), encoding: .utf8)
            .split(separator: "\n").map(String.init)
        let spool = try Spool(stateDirectory: state)
        #expect(try spool.bodies() == expected)
        #expect(try spool.pendingCount(for: "primary") == 12)
        let post = "http://127.0.0.1:1/post?token=T"
        #expect(try spool.postDestinations() == [post])
        #expect(try spool.pendingCount(for: post) == 1)
        #expect(try spool.state(of: "primary").lastError == "connection refused after 4 attempts")
    }

    @Test func theFileIsPrivateAndInWALMode() throws {
        _ = try Spool(stateDirectory: state)
        var info = stat()
        #expect(stat(state + "/spool.sqlite", &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        // SQLite's header: bytes 18 and 19 are 2 for a WAL database.
        let header = try #require(FileManager.default.contents(atPath: state + "/spool.sqlite"))
        #expect(header.count >= 100 && header[18] == 2 && header[19] == 2)
    }

    @Test func recordsPastRetentionOrBeyondTheLimitAreExpiredAndCounted() throws {
        let spool = try Spool(stateDirectory: state)
        let limits = SpoolLimits(maxRetentionMilliseconds: 86_400_000, maxRecords: 3)
        let old = record(ageMilliseconds: 2 * 86_400_000)
        let fresh = (0..<4).map { record(ageMilliseconds: Int64(4 - $0) * 1000) }
        let expired = try spool.append(([old] + fresh).map { SpoolEntry($0) }, now: Self.now, limits: limits)
        #expect(expired == 2)  // the old one, then the oldest fresh one beyond 3 records
        #expect(try spool.count() == 3)
        #expect(try spool.expiredCount() == 2)
        #expect(try spool.bodies() == fresh.suffix(3).map { MosaicRecord($0).jsonLine() })
    }

    @Test func groupCommitCommitsAtOnceThenOncePerWindow() throws {
        let writer = SpoolWriter(spool: try Spool(stateDirectory: state), limits: SpoolLimits(), window: .seconds(60))
        let reader = try Spool(stateDirectory: state)
        try writer.add(SpoolEntry(record(ageMilliseconds: 0)), now: Self.now)
        #expect(try reader.count() == 1)  // nothing committed for a while: at once
        try writer.add(SpoolEntry(record(ageMilliseconds: 0)), now: Self.now)
        try writer.add(SpoolEntry(record(ageMilliseconds: 0)), now: Self.now)
        try writer.tick(now: Self.now)
        #expect(try reader.count() == 1)  // within the window: pending
        try writer.flush(now: Self.now)
        #expect(try reader.count() == 3)
        #expect(writer.committed == 3)
    }

    @Test func concurrentWritersOnOneFileLoseNothing() throws {
        let state = self.state
        _ = try Spool(stateDirectory: state)
        let errors = ErrorBox()
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            do {
                let spool = try Spool(stateDirectory: state)
                for _ in 0..<50 {
                    try spool.append((0..<20).map { _ in SpoolEntry(record(ageMilliseconds: Int64(worker))) }, now: Self.now, limits: SpoolLimits())
                }
            } catch {
                errors.add(error)
            }
        }
        #expect(errors.all.isEmpty, "\(errors.all)")
        #expect(try Spool(stateDirectory: state).count() == 4 * 50 * 20)
    }

    @Test func openingANewSpoolFromSeveralPlacesAtOnceMigratesItOnce() throws {
        let errors = ErrorBox()
        for round in 0..<10 {
            let state = self.state + "-\(round)"
            DispatchQueue.concurrentPerform(iterations: 4) { _ in
                do { _ = try Spool(stateDirectory: state) } catch { errors.add(error) }
            }
        }
        #expect(errors.all.isEmpty, "\(errors.all)")
    }

    @Test func aFileThatIsNotADatabaseIsAClearError() throws {
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try Data(repeating: 0x42, count: 4096).write(to: URL(fileURLWithPath: state + "/spool.sqlite"))
        #expect {
            try Spool(stateDirectory: state)
        } throws: { error in
            guard case GeolocateError.stateNotWritable(let path, let reason) = error else { return false }
            return path.hasSuffix("spool.sqlite") && reason.contains("not a database")
        }
    }
}

/// Errors collected from several threads.
final class ErrorBox: @unchecked Sendable {
    private let lock = NSLock()
    private var errors: [Error] = []

    func add(_ error: Error) {
        lock.lock()
        errors.append(error)
        lock.unlock()
    }

    var all: [Error] {
        lock.lock()
        defer { lock.unlock() }
        return errors
    }
}
