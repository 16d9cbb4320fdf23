import Crypto
import Foundation
import GeolocateConfig
import GeolocateModel

#if canImport(Glibc)
import Glibc
#endif

/// The device's signing key (SPEC §15), and the public keys it replaced.
///
/// The file is PEM: the signing key first, either an Ed25519 private key as PKCS#8 (`BEGIN
/// PRIVATE KEY`, which `openssl pkey` reads) or where a TPM holds its P-256 key (`BEGIN
/// GEOLOCATE TPM KEY`: the handle, the authorisation value and the public key); then each
/// retired public key (`BEGIN PUBLIC KEY`), newest first, so that `key show` keeps listing a
/// key a server may still hold tokens of. It is refused unless it is a regular file of this
/// user's that nobody else may read or write (0600): whoever reads it can sign as this device.
package struct DeviceKey: Sendable {
    /// The key that signs.
    package let signing: SigningKey
    /// The public keys of earlier keys, newest first.
    package let retired: [DevicePublicKey]

    package init(_ signing: SigningKey, retired: [DevicePublicKey] = []) {
        self.signing = signing
        self.retired = retired
    }

    package init(privateKey: Curve25519.Signing.PrivateKey, retired: [DevicePublicKey] = []) {
        self.init(.ed25519(privateKey), retired: retired)
    }

    /// The largest key file read: a key and a few thousand retired ones.
    package static let maximumBytes = 256 * 1024
    /// The most retired public keys a file keeps (about 65 KB): `rotate` forgets the oldest
    /// beyond it, saying so, so a key file never outgrows `maximumBytes`.
    package static let maximumRetired = 1000

    /// Where the key is: `signing.keyFile`, else `/etc/geolocate/device-key` in system mode
    /// (not the state directory, which monitoring users may read), else `device-key` in the
    /// state directory.
    package static func path(settings: Settings, environment: [String: String], stateDirectory: String) -> String {
        if let file = settings[ConfigKey.signingKeyFile] { return settings.resolvedPath(file) }
        if Paths.isSystemMode(environment: environment) { return Paths.systemDeviceKeyFile }
        return StateFile.deviceKey.path(in: stateDirectory)
    }

    /// The key in `path`; a key in a TPM is reached at `tcti` (`signing.tpm`) through `tpm`
    /// (without them it can be shown, not used).
    /// - Throws: `GeolocateError.missingSetting` (78) naming the file and the command that makes
    ///   one: no key, a key others may read or write or that is not this user's, or a file that
    ///   holds no signing key.
    package static func load(from path: String, tcti: String = "",
                             tpm: (any TPMAccess)? = nil) throws -> DeviceKey {
        func refused(_ why: String) -> GeolocateError {
            .missingSetting("device key \(path) \(why)")
        }
        /// A key this user may not even open is said as another user's when it is one.
        func unreadable(_ reason: String) -> GeolocateError {
            if let owner = DeviceKey.owner(ofFile: path), !DeviceKey.signers(of: path).contains(owner) {
                return refused("belongs to another user (uid \(owner)); it must be the signing user's own (0600)\(DeviceKey.ownerHint(path))")
            }
            return refused("cannot be read (\(reason))")
        }
        // Opened without following a link, and judged by what was opened (SPEC §14).
        let opened: OpenDirectory.OpenedFile?
        do {
            guard let (directory, name) = try OpenDirectory.parent(of: path, create: false) else {
                throw refused("does not exist; make one with: geolocate key init")
            }
            opened = try directory.openFile(name, .read, alsoOwnedBy: signers(of: path))
        } catch let error as GeolocateError where error.isStateNotWritable {
            throw unreadable(error.reason ?? error.description)
        } catch let error as POSIXError {
            throw error.code == .ENOTDIR ? refused("does not exist; make one with: geolocate key init") : unreadable(ErrorText.posix(error.code.rawValue))
        }
        guard let fd = opened?.descriptor else { throw refused("does not exist; make one with: geolocate key init") }
        defer { close(fd) }
        var status = stat()
        fstat(fd, &status)
        guard DeviceKey.signers(of: path).contains(status.st_uid) else {
            throw refused("belongs to another user; it must be the signing user's own (0600)\(DeviceKey.ownerHint(path))")
        }
        guard status.st_mode & 0o077 == 0 else {
            throw refused("may be read or written by others (mode \(String(status.st_mode & 0o777, radix: 8))); chmod 600 it, or make a new one")
        }
        let data: Data
        switch BoundedFile.read(descriptor: fd, limit: maximumBytes) {
        case .success(let contents): data = contents
        case .failure(let failure): throw refused(failure.text(limit: maximumBytes))
        }
        guard let key = DeviceKey(pem: String(decoding: data, as: UTF8.self), tcti: tcti, tpm: tpm) else {
            throw refused("holds no signing key (an Ed25519 PKCS#8 key or a GEOLOCATE TPM KEY); make one with: geolocate key init --force-new")
        }
        return key
    }

    /// Writes the key to `path`, 0600. Without `replacing`, an existing file is never touched;
    /// with it, only a regular file of this user's is replaced (never a device, a FIFO, a
    /// symlink or another user's file that `signing.keyFile` names).
    /// - Throws: `GeolocateError.missingSetting` (78) when a key is there and `replacing` is
    ///   false, or the path holds something that is no key of this user's;
    ///   `GeolocateError.stateNotWritable` when the file cannot be written.
    package func save(to path: String, replacing: Bool) throws {
        let data = Data(pem.utf8)
        func unwritable(_ error: Error) -> GeolocateError {
            .missingSetting("device key \(path) cannot be written: \(ErrorText.plain(error))")
        }
        let directory: OpenDirectory, name: String
        do {
            guard let parent = try OpenDirectory.parent(of: path, create: true) else { throw POSIXError(.ENOENT) }
            (directory, name) = parent
        } catch {
            throw unwritable(error)
        }
        try DeviceKey.refuseUnreplaceable(name, in: directory, path: path)
        // The key is the signing user's, wherever it is kept: never given to a directory's owner.
        let signer = DeviceKey.owner(of: path)
        if replacing {
            do { try directory.writeAtomically(data, to: name, permissions: 0o600, owner: signer) } catch { throw unwritable(error) }
            return
        }
        // Written aside, then linked into place: `link` fails on an existing name, so two
        // `key init`s at once, or one after another, never replace a key.
        let made: Bool
        do { made = try directory.writeIfAbsent(data, to: name, permissions: 0o600, owner: signer) } catch { throw unwritable(error) }
        guard made else { throw DeviceKey.alreadyExists(path) }
    }

    /// Refuses what is at `path` unless a key may be written there: nothing, or a regular file
    /// of a signing user's with one name. Judged without following a link: a key is replaced
    /// only where a key of ours is. Asked before a TPM makes or removes anything too, so a
    /// refusal leaves the TPM's key as it is.
    /// - Throws: `GeolocateError.missingSetting` (78) naming what is there.
    static func refuseUnreplaceable(at path: String) throws {
        guard let (directory, name) = try? OpenDirectory.parent(of: path, create: false) else { return }
        try refuseUnreplaceable(name, in: directory, path: path)
    }

    private static func refuseUnreplaceable(_ name: String, in directory: OpenDirectory, path: String) throws {
        var status = stat()
        guard fstatat(directory.descriptor, name, &status, AT_SYMLINK_NOFOLLOW) == 0 else { return }
        if status.st_mode & S_IFMT != S_IFREG {
            throw GeolocateError.missingSetting("device key \(path) is not a regular file; nothing was written there")
        }
        if !DeviceKey.signers(of: path).contains(status.st_uid) {
            throw GeolocateError.missingSetting("device key \(path) belongs to another user; nothing was written there")
        }
        if status.st_nlink != 1 {
            throw GeolocateError.missingSetting("device key \(path) has \(status.st_nlink) hard links, so it may be another file's name too; nothing was written there")
        }
    }

    /// Who a new key at `path` belongs to: the service user for the system key that root
    /// makes (the gate, as root, and the services sign with it; SPEC §16), else this user.
    static func owner(of path: String) -> (uid: uid_t, gid: gid_t) {
        if geteuid() == 0, path == Paths.systemDeviceKeyFile, let user = getpwnam(Paths.serviceUserName) {
            return (user.pointee.pw_uid, user.pointee.pw_gid)
        }
        return (geteuid(), getegid())
    }

    /// The owner of the file at `path`, judged without opening it (a key this user may not read).
    private static func owner(ofFile path: String) -> uid_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_uid : nil
    }

    /// For the system key, the command that gives it to the service user, whose key root's
    /// gate uses too.
    private static func ownerHint(_ path: String) -> String {
        path == Paths.systemDeviceKeyFile ? "; as root: chown \(Paths.serviceUserName): \(path)" : ""
    }

    /// The users whose key at `path` this process signs with: its own, and root also the
    /// service user's system key.
    static func signers(of path: String) -> Set<uid_t> {
        var users: Set<uid_t> = [geteuid()]
        if geteuid() == 0, path == Paths.systemDeviceKeyFile, let service = Paths.serviceUserID { users.insert(service) }
        return users
    }

    /// Runs `body` holding `path`'s lock (`path.lock`), so that changes of one key file take
    /// turns (two `rotate`s at once would each sign a successor and keep only one), and first
    /// removes what a killed writer left beside it: temporary copies, which hold private keys.
    package static func changing<T>(_ path: String, _ body: () throws -> T) throws -> T {
        guard let (directory, name) = try OpenDirectory.parent(of: path, create: true) else { throw POSIXError(.ENOENT) }
        let lock = try FileLock(name + ".lock", in: directory)
        defer { withExtendedLifetime(lock) {} }
        for entry in directory.names() where DeviceKey.isTemporaryCopy(entry, of: name) {
            directory.remove(entry)
        }
        return try body()
    }

    /// Whether `entry` is a temporary copy of the key file `name`, in the two shapes this file
    /// writes or wrote: `OpenDirectory`'s `.NAME.XXXXXX` (six characters, as `mkstemp`'s) and
    /// earlier versions' `NAME.PID.tmp`. Nothing else beside the key is touched (a `signing.keyFile` named `id`
    /// may sit beside an `id.pub`).
    static func isTemporaryCopy(_ entry: String, of name: String) -> Bool {
        if entry.hasPrefix(".\(name)."), entry.utf8.count == name.utf8.count + 8 {
            return entry.utf8.suffix(6).allSatisfy { ("A"..."Z").contains(UnicodeScalar($0)) || ("a"..."z").contains(UnicodeScalar($0))
                || ("0"..."9").contains(UnicodeScalar($0)) }
        }
        guard entry.hasPrefix("\(name)."), entry.hasSuffix(".tmp") else { return false }
        let middle = entry.dropFirst(name.count + 1).dropLast(4)
        return !middle.isEmpty && middle.allSatisfy(\.isASCII) && middle.allSatisfy(\.isNumber)
    }

    /// `next` as the signing key, retiring this one, and how many of the oldest retired keys
    /// it forgets to stay within `maximumRetired`.
    package func rotated(to next: SigningKey) -> (key: DeviceKey, forgotten: Int) {
        let retired = [signing.publicKey] + retired
        return (DeviceKey(next, retired: Array(retired.prefix(DeviceKey.maximumRetired))),
                max(0, retired.count - DeviceKey.maximumRetired))
    }

    // MARK: Public forms

    /// The signing key's RFC 7638 thumbprint, the `kid` of its tokens.
    package var keyID: String { signing.publicKey.thumbprint }

    /// The signing key as a JWK Set (RFC 7517 §5) with the device id `iss` beside `keys`, so
    /// a server enrols the device's id and key together; the retired keys only when asked
    /// (enrolling from them would keep trusting a key the device gave up).
    package func jwkSet(issuer: String, includingRetired: Bool = false) -> String {
        var json = JSONWriter()
        json.beginObject()
        json.string("iss", issuer)
        json.beginArray("keys")
        for key in [signing.publicKey] + (includingRetired ? retired : []) { key.writeJWK(to: &json) }
        json.endArray()
        json.endObject()
        return json.text
    }

    /// The signing key, then the retired ones when asked, as PEM public keys (SubjectPublicKeyInfo).
    package func publicPEM(includingRetired: Bool = false) -> String {
        ([signing.publicKey] + (includingRetired ? retired : [])).map { DeviceKey.pem("PUBLIC KEY", $0.subjectPublicKeyInfo) }.joined()
    }

    // MARK: PEM

    /// DER of PKCS#8 `PrivateKeyInfo` for Ed25519 (RFC 8410 §7) before the 32-byte seed.
    private static let pkcs8Prefix: [UInt8] = [0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70,
                                               0x04, 0x22, 0x04, 0x20]
    /// The label of a key a TPM holds; its bytes are the handle (4, big-endian), the length of
    /// the authorisation value (1) and the value, then the public key's SubjectPublicKeyInfo.
    private static let tpmLabel = "GEOLOCATE TPM KEY"

    /// The key file's text: the signing key's block, then the retired public keys.
    package var pem: String {
        let first: String
        switch signing {
        case .ed25519(let key):
            first = DeviceKey.pem("PRIVATE KEY", Data(DeviceKey.pkcs8Prefix) + key.rawRepresentation)
        case .tpm(let reference, let key, _):
            var bytes = withUnsafeBytes(of: reference.handle.bigEndian) { Data($0) }
            bytes.append(UInt8(reference.authorization.count))
            bytes.append(contentsOf: reference.authorization)
            first = DeviceKey.pem(DeviceKey.tpmLabel, bytes + key.derRepresentation)
        }
        return first + retired.map { DeviceKey.pem("PUBLIC KEY", $0.subjectPublicKeyInfo) }.joined()
    }

    /// The key a key file's text holds; `nil` when it holds no signing key.
    package init?(pem text: String, tcti: String = "", tpm: (any TPMAccess)? = nil) {
        var signing: SigningKey?
        var retired: [DevicePublicKey] = []
        for (label, der) in DeviceKey.pemBlocks(text) {
            if label == "PRIVATE KEY", signing == nil, der.count == 48, Array(der.prefix(16)) == DeviceKey.pkcs8Prefix {
                signing = (try? Curve25519.Signing.PrivateKey(rawRepresentation: der.suffix(32))).map { .ed25519($0) }
            } else if label == DeviceKey.tpmLabel, signing == nil {
                signing = DeviceKey.tpmKey(der, tcti: tcti, tpm: tpm)
            } else if label == "PUBLIC KEY", let key = DevicePublicKey(subjectPublicKeyInfo: Data(der)) {
                retired.append(key)
            }
        }
        guard let signing else { return nil }
        // A key listed twice (a hand-edited file, or the signing key pasted in as retired) is
        // listed once: a JWK Set's kids must be unique.
        var seen: Set<Data> = [signing.publicKey.identity]
        self.init(signing, retired: retired.filter { seen.insert($0.identity).inserted })
    }

    /// The TPM key a `GEOLOCATE TPM KEY` block holds; `nil` unless every part is whole and the
    /// handle a persistent one.
    private static func tpmKey(_ der: [UInt8], tcti: String, tpm: (any TPMAccess)?) -> SigningKey? {
        guard der.count > 5 else { return nil }
        let handle = der.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let length = Int(der[4])
        guard (0x8100_0000...0x81FF_FFFF).contains(handle), (1...64).contains(length), der.count > 5 + length,
              let key = try? P256.Signing.PublicKey(derRepresentation: der[(5 + length)...]) else { return nil }
        return .tpm(TPMKeyReference(tcti: tcti, handle: handle, authorization: Array(der[5..<(5 + length)])), key, tpm)
    }

    private static func pem(_ label: String, _ der: Data) -> String {
        let base64 = der.base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN \(label)-----\n\(base64)\n-----END \(label)-----\n"
    }

    private static func pemBlocks(_ text: String) -> [(String, [UInt8])] {
        var blocks: [(String, [UInt8])] = []
        var label: String?
        var body = ""
        for line in text.split(whereSeparator: \.isNewline).map({ $0.trimmingCharacters(in: .whitespaces) }) {
            if line.hasPrefix("-----BEGIN "), line.hasSuffix("-----") {
                label = String(line.dropFirst(11).dropLast(5))
                body = ""
            } else if line.hasPrefix("-----END "), let open = label {
                if let der = Data(base64Encoded: body) { blocks.append((open, Array(der))) }
                label = nil
            } else if label != nil {
                body += line
            }
        }
        return blocks
    }
}
