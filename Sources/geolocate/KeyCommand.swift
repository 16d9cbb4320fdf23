import ArgumentParser
import Foundation
import GeolocateConfig
import GeolocateDelivery

struct KeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key",
        abstract: "Make and show the device key that signs location tokens.",
        discussion: """
            An Ed25519 key in a file (signing.keyFile, else device-key in the state directory; \
            /etc/geolocate/device-key in system mode, the user geolocate's, which root's \
            login gate and the services share), mode 0600; with signing.keyProvider tpm, a \
            P-256 key made inside the TPM at signing.tpm (tokens are ES256), and the file \
            holds only where it is. Servers enrol the device from what 'key show' prints: its \
            id (iss) and the signing key.

            Examples:
              geolocate key init
              geolocate key show > device.jwks
              geolocate key rotate
              geolocate key attest --nonce N > evidence.json
            """,
        subcommands: [Init.self, Show.self, Rotate.self, Attest.self]
    )

    struct Init: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "init", abstract: "Make the device key; an existing one is kept.")
        @Flag(name: .customLong("force-new"), help: "Replace an existing key (a cloned disk image shares its key).")
        var forceNew = false
        @OptionGroup var globalOptions: GlobalOptions

        func run() throws {
            try runReportingErrors {
                try DeviceKey.initialize(in: try globalOptions.context(), replacing: forceNew) { try FileHandleOutput.stdout($0 + "\n") }
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
            try runReportingErrors { try FileHandleOutput.stdout(try DeviceKey.show(in: try globalOptions.context(), pem: pem, all: all)) }
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
            try runReportingErrors { try DeviceKey.rotate(in: try globalOptions.context()) { try FileHandleOutput.stdout($0 + "\n") } }
        }
    }

    struct Attest: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "attest",
            abstract: "Print the TPM's evidence that the signing key lives in it.",
            discussion: """
                For a key in a TPM (signing.keyProvider tpm). With --nonce, one JSON object \
                (akPub, certInfo, ekCert, ekPub, pubArea, sig: base64url): the TPM's \
                TPM2_Certify of the signing key by its attestation key, with the nonce inside, \
                and the endorsement key's certificate from the TPM maker. A server enrols the \
                attestation key once: it answers the evidence with a credential challenge that \
                only this TPM can open, and --activate prints the TPM's answer.

                Examples:
                  geolocate key attest --nonce N > evidence.json
                  geolocate key attest --activate=CHALLENGE
                """)
        /// Taken whatever it starts with, as trigger's: a server's nonce may start with `-`.
        @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("The server's nonce (1 to 64 bytes).", valueName: "nonce"))
        var nonce: String?
        @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Answer a server's credential challenge.", valueName: "challenge"))
        var activate: String?
        @OptionGroup var globalOptions: GlobalOptions

        func validate() throws {
            if (nonce == nil) == (activate == nil) { throw ValidationError("give one of --nonce and --activate") }
            // A server logs what it checks (`PlainText`).
            if let nonce, !PlainText.isPlain(nonce) { throw ValidationError("--nonce needs text without control characters") }
        }

        func run() throws {
            try runReportingErrors {
                let context = try globalOptions.context()
                if let nonce {
                    try FileHandleOutput.stdout(try DeviceKey.attest(in: context, nonce: nonce))
                } else if let activate {
                    try FileHandleOutput.stdout(try DeviceKey.activate(in: context, challenge: activate))
                }
            }
        }
    }
}
