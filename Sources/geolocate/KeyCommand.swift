import ArgumentParser
import Foundation
import GeolocateConfig
import GeolocateDelivery
import GeolocateModel
import Logging

struct KeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key",
        abstract: "Make and show the device key that signs location tokens.",
        discussion: """
            An Ed25519 key (signing.keyFile, else device-key in the state directory; \
            /etc/geolocate/device-key in system mode, the user geolocate's, which root's \
            login gate and the services share), mode 0600. Servers enrol the device from \
            what 'key show' prints: its id (iss) and the signing key.

            Examples:
              geolocate key init
              geolocate key show > device.jwks
              geolocate key rotate
            """,
        subcommands: [Init.self, Show.self, Rotate.self]
    )

    /// Where the key is for the configuration and state directory in force.
    static func keyPath(_ globalOptions: GlobalOptions) throws -> String {
        let settings = try globalOptions.configStore.settings()
        let environment = globalOptions.environment
        return DeviceKey.path(settings: settings, environment: environment, stateDirectory: Paths.stateDirectory(environment: environment))
    }

    /// The device id (`iss`) of the state directory in force, made if it has none yet.
    static func issuer(_ globalOptions: GlobalOptions) throws -> String {
        try DeviceInfo.deviceID(stateDirectory: Paths.stateDirectory(environment: globalOptions.environment))
    }

    struct Init: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "init", abstract: "Make the device key; an existing one is kept.")
        @Flag(name: .customLong("force-new"), help: "Replace an existing key (a cloned disk image shares its key).")
        var forceNew = false
        @OptionGroup var globalOptions: GlobalOptions

        func run() throws {
            try runReportingErrors {
                let path = try KeyCommand.keyPath(globalOptions)
                let issuer = try KeyCommand.issuer(globalOptions)
                let key = DeviceKey(privateKey: .init())
                try DeviceKey.changing(path) { try key.save(to: path, replacing: forceNew) }
                try FileHandleOutput.stdout(key.jwkSet(issuer: issuer) + "\n")
                DiagnosticLog.logger(verbose: false).notice("made the device key \(path) (kid \(key.keyID))")
            }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show", abstract: "Print the device id and signing key, as a server enrols them.",
            discussion: """
                One JSON object: iss, the device id tokens carry, and keys, a JWK Set of the \
                signing key. Retired keys (those 'key rotate' replaced) only with --all: a \
                server that enrols them keeps trusting keys the device gave up.
                """)
        @Flag(name: .long, help: "Print the public keys as PEM instead.")
        var pem = false
        @Flag(name: .long, help: "List the retired keys too, after the signing key.")
        var all = false
        @OptionGroup var globalOptions: GlobalOptions

        func run() throws {
            try runReportingErrors {
                let key = try DeviceKey.load(from: try KeyCommand.keyPath(globalOptions))
                if pem {
                    try FileHandleOutput.stdout(key.publicPEM(includingRetired: all))
                } else {
                    try FileHandleOutput.stdout(key.jwkSet(issuer: try KeyCommand.issuer(globalOptions), includingRetired: all) + "\n")
                }
            }
        }
    }

    struct Rotate: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate",
            abstract: "Make a new key; print the old key's signed word for it.",
            discussion: """
                Prints a JWS (typ key-rotation+jwt) that the old key signs, naming the new key \
                (sub: its kid; jwk: the key), so a server that knows the old key can take the \
                new one. 'key show --all' still lists the old public key.
                """
        )
        @OptionGroup var globalOptions: GlobalOptions

        func run() throws {
            try runReportingErrors {
                let path = try KeyCommand.keyPath(globalOptions)
                let issuer = try KeyCommand.issuer(globalOptions)
                let logger = DiagnosticLog.logger(verbose: false)
                // Read, signed and written under the key's lock: a rotation at the same time
                // waits, then rotates the key this one made.
                let (old, new, statement) = try DeviceKey.changing(path) {
                    let old = try DeviceKey.load(from: path)
                    let (new, forgotten) = old.rotated()
                    let statement = try KeyRotation(old: old, new: new, issuer: issuer,
                                                    issuedAt: globalOptions.clock.nowMilliseconds / 1000).compact()
                    try new.save(to: path, replacing: true)
                    if forgotten > 0 {
                        logger.warning("the oldest retired key is no longer listed: a key file keeps \(DeviceKey.maximumRetired) retired keys")
                    }
                    return (old, new, statement)
                }
                try FileHandleOutput.stdout(statement + "\n")
                logger.notice(
                    "the device key \(path) is new (kid \(new.keyID)); the old one (kid \(old.keyID)) signs no more (key show --all lists it)")
            }
        }
    }
}
