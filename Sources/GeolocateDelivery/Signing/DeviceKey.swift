import Crypto
import Foundation
import GeolocateConfig
import GeolocateModel

#if canImport(Glibc)
import Glibc
#endif

/// The device's Ed25519 signing key (SPEC §15), and the public keys it replaced.
///
/// The file is PEM: the private key as PKCS#8 (`BEGIN PRIVATE KEY`, which `openssl pkey`
/// reads), then each retired public key (`BEGIN PUBLIC KEY`), newest first, so that `key show`
/// keeps listing a key a server may still hold tokens of. It is refused unless it is a regular
/// file of this user's that nobody else may read or write (0600): whoever reads it can sign
/// as this device.
package struct DeviceKey: Sendable {
    /// The key that signs.
    package let privateKey: Curve25519.Signing.PrivateKey
    /// The public keys of earlier keys, newest first.
    package let retired: [Curve25519.Signing.PublicKey]

    package init(privateKey: Curve25519.Signing.PrivateKey, retired: [Curve25519.Signing.PublicKey] = []) {
        self.privateKey = privateKey
        self.retired = retired
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

    /// The key in `path`.
    /// - Throws: `GeolocateError.missingSetting` (78) naming the file and the command that makes
    ///   one: no key, a key others may read or write or that is not this user's, or a file that
    ///   holds no Ed25519 key.
    package static func load(from path: String) throws -> DeviceKey {
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
        guard let key = DeviceKey(pem: String(decoding: data, as: UTF8.self)) else {
            throw refused("holds no Ed25519 private key (PEM, PKCS#8); make one with: geolocate key init --force-new")
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
        // Judged without following a link: a key is replaced only where a key of ours is.
        var status = stat()
        if fstatat(directory.descriptor, name, &status, AT_SYMLINK_NOFOLLOW) == 0 {
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
        guard made else {
            throw GeolocateError.missingSetting("a device key already exists at \(path): geolocate key show prints it; "
                + "geolocate key init --force-new replaces it (a cloned disk image), geolocate key rotate moves to a new one")
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

    /// A new key that retires this one, and how many of the oldest retired keys it forgets
    /// to stay within `maximumRetired`.
    package func rotated() -> (key: DeviceKey, forgotten: Int) {
        let retired = [privateKey.publicKey] + retired
        return (DeviceKey(privateKey: Curve25519.Signing.PrivateKey(), retired: Array(retired.prefix(DeviceKey.maximumRetired))),
                max(0, retired.count - DeviceKey.maximumRetired))
    }

    // MARK: Public forms

    /// The signing key's RFC 7638 thumbprint, the `kid` of its tokens.
    package var keyID: String { DeviceKey.thumbprint(privateKey.publicKey) }

    /// The signing key as a JWK Set (RFC 7517 §5) with the device id `iss` beside `keys`, so
    /// a server enrols the device's id and key together; the retired keys only when asked
    /// (enrolling from them would keep trusting a key the device gave up).
    package func jwkSet(issuer: String, includingRetired: Bool = false) -> String {
        var json = JSONWriter()
        json.beginObject()
        json.string("iss", issuer)
        json.beginArray("keys")
        for key in [privateKey.publicKey] + (includingRetired ? retired : []) { DeviceKey.writeJWK(key, to: &json) }
        json.endArray()
        json.endObject()
        return json.text
    }

    /// The signing key, then the retired ones when asked, as PEM public keys (SubjectPublicKeyInfo).
    package func publicPEM(includingRetired: Bool = false) -> String {
        ([privateKey.publicKey] + (includingRetired ? retired : [])).map { DeviceKey.pem("PUBLIC KEY", DeviceKey.spkiPrefix + $0.rawRepresentation) }.joined()
    }

    /// A public key as a JWK (RFC 8037): `crv`, `kid`, `kty`, `x`, in that order.
    package static func writeJWK(_ key: Curve25519.Signing.PublicKey, to json: inout JSONWriter) {
        json.beginObject()
        json.string("crv", "Ed25519")
        json.string("kid", thumbprint(key))
        json.string("kty", "OKP")
        json.string("x", Base64URL.encode(key.rawRepresentation))
        json.endObject()
    }

    /// RFC 7638: SHA-256 of the required members in lexicographic order with no spaces,
    /// base64url.
    package static func thumbprint(_ key: Curve25519.Signing.PublicKey) -> String {
        let members = #"{"crv":"Ed25519","kty":"OKP","x":"\#(Base64URL.encode(key.rawRepresentation))"}"#
        return Base64URL.encode(Data(SHA256.hash(data: Data(members.utf8))))
    }

    // MARK: PEM

    /// DER of PKCS#8 `PrivateKeyInfo` for Ed25519 (RFC 8410 §7) before the 32-byte seed.
    private static let pkcs8Prefix: [UInt8] = [0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70,
                                               0x04, 0x22, 0x04, 0x20]
    /// DER of `SubjectPublicKeyInfo` for Ed25519 (RFC 8410 §4) before the 32-byte key.
    private static let spkiPrefix: [UInt8] = [0x30, 0x2A, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x03, 0x21, 0x00]

    private var pem: String {
        DeviceKey.pem("PRIVATE KEY", DeviceKey.pkcs8Prefix + privateKey.rawRepresentation)
            + retired.map { DeviceKey.pem("PUBLIC KEY", DeviceKey.spkiPrefix + $0.rawRepresentation) }.joined()
    }

    private init?(pem text: String) {
        var privateKey: Curve25519.Signing.PrivateKey?
        var retired: [Curve25519.Signing.PublicKey] = []
        for (label, der) in DeviceKey.pemBlocks(text) {
            if label == "PRIVATE KEY", privateKey == nil, der.count == 48, Array(der.prefix(16)) == DeviceKey.pkcs8Prefix {
                privateKey = try? Curve25519.Signing.PrivateKey(rawRepresentation: der.suffix(32))
            } else if label == "PUBLIC KEY", der.count == 44, Array(der.prefix(12)) == DeviceKey.spkiPrefix,
                      let key = try? Curve25519.Signing.PublicKey(rawRepresentation: der.suffix(32)) {
                retired.append(key)
            }
        }
        guard let privateKey else { return nil }
        // A key listed twice (a hand-edited file, or the signing key pasted in as retired) is
        // listed once: a JWK Set's kids must be unique.
        var seen: Set<Data> = [privateKey.publicKey.rawRepresentation]
        self.init(privateKey: privateKey, retired: retired.filter { seen.insert($0.rawRepresentation).inserted })
    }

    private static func pem(_ label: String, _ der: [UInt8]) -> String {
        let base64 = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
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
