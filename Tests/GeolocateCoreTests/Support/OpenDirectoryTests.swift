import Foundation
@testable import GeolocateModel
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `OpenDirectory` in the test process: what it refuses in a state directory, what it opens,
/// makes and replaces there (SPEC §14). The whole commands, as root in another user's
/// directory, are PlantedFileEndToEndTests.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct OpenDirectoryTests {
    let root: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("open-directory-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    func directory() throws -> OpenDirectory {
        try #require(try OpenDirectory.open(root, create: false))
    }

    /// A file with `data` as a victim outside the directory, and its bytes.
    func outsideFile() throws -> String {
        let path = root + "-victim"
        try Data("outside\n".utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    func refusal(_ body: () throws -> Void) -> String? {
        do { try body() } catch let error as GeolocateError where error.isRefusedStateFile { return error.reason ?? "" } catch { return "other: \(error)" }
        return nil
    }

    @Test func aLinkIsRefusedForReadingLockingAndMakingAndItsTargetIsUntouched() throws {
        let victim = try outsideFile()
        #expect(symlink(victim, root + "/spool.lock") == 0)
        let directory = try directory()
        #expect(refusal { _ = try directory.openFile("spool.lock", .readWrite, create: true) }?.contains("a symbolic link") == true)
        #expect(refusal { _ = try directory.read("spool.lock", limit: 100) }?.contains("a symbolic link") == true)
        #expect(refusal { _ = try FileLock("spool.lock", in: directory) }?.contains("a symbolic link") == true)
        #expect(refusal { try directory.check(["spool.lock"]) }?.contains("a symbolic link") == true)
        #expect(FileManager.default.contents(atPath: victim) == Data("outside\n".utf8))
    }

    @Test func aFIFOALinkToADeviceOrADirectoryIsRefusedWithoutBeingOpened() throws {
        #expect(mkfifo(root + "/flush.lock", 0o600) == 0)
        #expect(symlink("/dev/null", root + "/device-id") == 0)
        #expect(mkdir(root + "/last-known.json", 0o700) == 0)
        let directory = try directory()
        // A FIFO opened for reading without O_NONBLOCK would wait for a writer for ever.
        #expect(refusal { _ = try directory.read("flush.lock", limit: 100) } == "it is a FIFO, not a regular file")
        #expect(refusal { _ = try directory.read("device-id", limit: 100) } == "it is a symbolic link, not a regular file")
        #expect(refusal { _ = try directory.read("last-known.json", limit: 100) } == "it is a directory, not a regular file")
    }

    @Test func aSecondHardLinkIsRefused() throws {
        let victim = try outsideFile()
        #expect(link(victim, root + "/spool.sqlite-wal") == 0)
        let directory = try directory()
        #expect(refusal { try directory.check(["spool.sqlite-wal"]) } == "it has 2 hard links, so it may be another file's name too")
        #expect(refusal { _ = try directory.openFile("spool.sqlite-wal", .readWrite) }?.contains("hard links") == true)
    }

    @Test func aMissingFileIsMadePrivateWithExclusiveCreationAndThenOpened() throws {
        let directory = try directory()
        #expect(try directory.openFile("spool.lock", .read) == nil, "not made without create")
        let made = try #require(try directory.openFile("spool.lock", .readWrite, create: true))
        close(made.descriptor)
        #expect(made.created)
        var info = stat()
        #expect(lstat(root + "/spool.lock", &info) == 0 && info.st_mode & 0o7777 == 0o600 && info.st_uid == geteuid())
        let again = try #require(try directory.openFile("spool.lock", .readWrite, create: true))
        close(again.descriptor)
        #expect(!again.created)
    }

    @Test func anAtomicWriteReplacesALinkInsteadOfWritingThroughIt() throws {
        let victim = try outsideFile()
        #expect(symlink(victim, root + "/last-known.json") == 0)
        try AtomicFile.write(Data("{}".utf8), to: root + "/last-known.json", permissions: 0o600)
        var info = stat()
        #expect(lstat(root + "/last-known.json", &info) == 0 && info.st_mode & S_IFMT == S_IFREG, "the link itself was replaced")
        #expect(FileManager.default.contents(atPath: victim) == Data("outside\n".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: root) == ["last-known.json"], "no temporary file left")
    }

    @Test func writeIfAbsentNeverReplaces() throws {
        let directory = try directory()
        #expect(try directory.writeIfAbsent(Data("first".utf8), to: "device-id", permissions: 0o600))
        #expect(try !directory.writeIfAbsent(Data("second".utf8), to: "device-id", permissions: 0o600))
        #expect(try directory.read("device-id", limit: 100) == Data("first".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: root) == ["device-id"], "no temporary file left")
    }

    @Test func aPrivateSubdirectoryMustBeOursAndClosed() throws {
        let directory = try directory()
        let gate = try directory.privateSubdirectory("gate")
        var info = stat()
        #expect(lstat(root + "/gate", &info) == 0 && info.st_mode & 0o777 == 0o700)
        try gate.writeAtomically(Data("x".utf8), to: "previous-report.json", permissions: 0o600)
        #expect(FileManager.default.fileExists(atPath: root + "/gate/previous-report.json"))

        chmod(root + "/gate", 0o755)
        #expect(refusal { _ = try directory.privateSubdirectory("gate") }?.contains("closed to others (0700)") == true)
        rename(root + "/gate", root + "/gate.old")
        #expect(symlink(root + "/gate.old", root + "/gate") == 0)
        #expect(refusal { _ = try directory.privateSubdirectory("gate") } == "it is a symbolic link, not a directory of its own")
    }

    /// Files of the directory's owner are the service's data, which root may use; a third
    /// user's are refused. Needs root to make files of other users.
    @Test(.enabled(if: geteuid() == 0, "needs root to make other users' files")) func ownersOtherThanUsRootAndTheDirectorysAreRefused() throws {
        let service = getpwnam("nobody").pointee.pw_uid
        chown(root, service, service)
        _ = FileManager.default.createFile(atPath: root + "/spool.sqlite", contents: Data())
        chown(root + "/spool.sqlite", service, service)
        _ = FileManager.default.createFile(atPath: root + "/device-id", contents: Data())
        chown(root + "/device-id", 12345, 12345)
        let directory = try directory()
        #expect(directory.problem(with: "spool.sqlite") == nil, "the directory's owner's file")
        #expect(directory.problem(with: "device-id") == "it belongs to uid 12345, neither this user (uid 0) nor the directory's owner (uid \(service))")
        // Made by root there: given to the directory's owner, as only a file just made with O_EXCL is.
        let made = try #require(try directory.openFile("spool.lock", .readWrite, create: true))
        close(made.descriptor)
        var info = stat()
        #expect(lstat(root + "/spool.lock", &info) == 0 && info.st_uid == service)
        #expect(directory.stateRefusal() == .stateFileRefused(path: root + "/device-id", reason: "it belongs to uid 12345, neither this user (uid 0) nor the directory's owner (uid \(service))"))
    }
}
