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
            /etc/geolocate/device-key in system mode), mode 0600. Servers check tokens \
            (trigger --format jwt) with the public key that 'key show' prints.

            Examples:
              geolocate key init
              geolocate key show > device.jwks
              geolocate key rotate
            """,
        subcommands: [Init.self, Show.self, Rotate.self]
    )

    /// Where the key is for the configuration and state directory in force.
    static func keyPath(_ globalOptions: GlobalOptions) throws -> String {
        let settings = try ConfigStore(path: globalOptions.configPath).settings()
        let environment = globalOptions.environment
        return DeviceKey.path(settings: settings, environment: environment, stateDirectory: Paths.stateDirectory(environment: environment))
    }

    struct Init: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "init", abstract: "Make the device key; an existing one is kept.")
        @Flag(name: .customLong("force-new"), help: "Replace an existing key (a cloned disk image shares its key).")
        var forceNew = false
        @OptionGroup var globalOptions: GlobalOptions

        func run() throws {
            try runReportingErrors {
                let path = try KeyCommand.keyPath(globalOptions)
                let key = DeviceKey(privateKey: .init())
                try DeviceKey.changing(path) { try key.save(to: path, replacing: forceNew) }
                try FileHandleOutput.stdout(key.jwkSet + "\n")
                DiagnosticLog.logger(verbose: false).notice("made the device key \(path) (kid \(key.keyID))")
            }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "show",
                                                        abstract: "Print the public keys as a JWK Set, signing key first.")
        @Flag(name: .long, help: "Print them as PEM instead.")
        var pem = false
        @OptionGroup var globalOptions: GlobalOptions

        func run() throws {
            try runReportingErrors {
                let key = try DeviceKey.load(from: try KeyCommand.keyPath(globalOptions))
                try FileHandleOutput.stdout(pem ? key.publicPEM : key.jwkSet + "\n")
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
                new one. The old public key stays listed by 'key show'.
                """
        )
        @OptionGroup var globalOptions: GlobalOptions

        func run() throws {
            try runReportingErrors {
                let path = try KeyCommand.keyPath(globalOptions)
                let issuer = try DeviceInfo.deviceID(stateDirectory: Paths.stateDirectory(environment: globalOptions.environment))
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
                    "the device key \(path) is new (kid \(new.keyID)); the old one (kid \(old.keyID)) signs no more and stays listed by key show")
            }
        }
    }
}
