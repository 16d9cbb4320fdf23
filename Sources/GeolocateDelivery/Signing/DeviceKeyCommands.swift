import GeolocateConfig
import GeolocateModel

/// `key init`, `key show` and `key rotate`: the device key of the context's configuration and
/// state directory, each returning what the command prints and saying the rest on the logger.
extension DeviceKey {
    /// Where the key is for `context` (`signing.keyFile`, else the state directory's, else
    /// system mode's).
    package static func path(in context: CommandContext) -> String {
        path(settings: context.settings, environment: context.environment, stateDirectory: context.stateDirectory)
    }

    /// `key init`: makes the key (an existing one is kept unless `replacing`), writes the JWK
    /// Set a server enrols to `write`, then says on the logger what it made (after, so that a
    /// failed write is the one line said).
    /// - Throws: `GeolocateError` when a key exists and `replacing` is false, or it cannot be
    ///   written; what `write` throws.
    package static func initialize(in context: CommandContext, replacing: Bool, write: (String) throws -> Void) throws {
        let path = path(in: context)
        let issuer = try DeviceInfo.deviceID(stateDirectory: context.stateDirectory)
        let key = DeviceKey(privateKey: .init())
        try changing(path) { try key.save(to: path, replacing: replacing) }
        try write(key.jwkSet(issuer: issuer))
        context.logger.notice("made the device key \(path) (kid \(key.keyID))")
    }

    /// `key show`: the device id and the signing key (retired ones too with `all`) as one
    /// JSON object, or with `pem` the public keys as PEM.
    package static func show(in context: CommandContext, pem: Bool, all: Bool) throws -> String {
        let key = try load(from: path(in: context))
        if pem { return key.publicPEM(includingRetired: all) }
        return key.jwkSet(issuer: try DeviceInfo.deviceID(stateDirectory: context.stateDirectory), includingRetired: all) + "\n"
    }

    /// `key rotate`: a new key, and the statement the old key signs for it (a JWS) written to
    /// `write`, then the note on the logger.
    ///
    /// Read, signed and written under the key's lock: a rotation at the same time waits, then
    /// rotates the key this one made. The statement is written before the new key is kept: a
    /// stdout that fails leaves the old key in place, where the statement would otherwise be
    /// lost with the key changed (a hostile pass); a key that then cannot be kept is an error,
    /// and the old key stays.
    package static func rotate(in context: CommandContext, write: (String) throws -> Void) throws {
        let path = path(in: context)
        let issuer = try DeviceInfo.deviceID(stateDirectory: context.stateDirectory)
        let logger = context.logger
        let (old, new) = try changing(path) {
            let old = try load(from: path)
            let (new, forgotten) = old.rotated()
            let statement = try KeyRotation(old: old, new: new, issuer: issuer, issuedAt: context.clock.nowMilliseconds / 1000).compact()
            try write(statement)
            try new.save(to: path, replacing: true)
            if forgotten > 0 {
                logger.warning("the oldest retired key is no longer listed: a key file keeps \(maximumRetired) retired keys")
            }
            return (old, new)
        }
        logger.notice("the device key \(path) is new (kid \(new.keyID)); the old one (kid \(old.keyID)) signs no more (key show --all lists it)")
    }
}
