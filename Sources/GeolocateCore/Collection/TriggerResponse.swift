import GeolocateConfig
import GeolocateDelivery
import GeolocateModel

/// How `trigger` prints its record: in a record format, or as `jwt`, the record signed as a
/// location token.
package enum TriggerFormat: Equatable, Sendable {
    case record(RecordFormat)
    case jwt

    package init?(name argument: String) {
        if argument == "jwt" {
            self = .jwt
        } else if let format = RecordFormat(rawValue: argument) {
            self = .record(format)
        } else {
            return nil
        }
    }

    package var name: String {
        switch self {
        case .record(let format): return format.rawValue
        case .jwt: return "jwt"
        }
    }

    package static var allNames: [String] { RecordFormat.allCases.map(\.rawValue) + ["jwt"] }
}

/// What `trigger` does with its record besides making it: how it is printed, where it is sent,
/// and what ends the command with an error once both are done.
package struct TriggerOutput: Sendable {
    package var format: TriggerFormat
    /// `--audience`, for `jwt`: else `signing.audience`.
    package var audience: String?
    /// `--nonce`, for `jwt`: the server's challenge.
    package var nonce: String?
    /// `--post URL`.
    package var post: String?
    /// `--endpoint NAME`: else `actions.NAME.endpoint`, unless `--post` says where.
    package var endpoint: String?
    /// `--require-location`: exit 3 when the record has no location.
    package var requireLocation: Bool
    /// `--enforce`: exit 4 unless the policy allows.
    package var enforce: Bool

    package init(format: TriggerFormat = .record(.mosaic), audience: String? = nil, nonce: String? = nil, post: String? = nil,
                 endpoint: String? = nil, requireLocation: Bool = false, enforce: Bool = false) {
        self.format = format
        self.audience = audience
        self.nonce = nonce
        self.post = post
        self.endpoint = endpoint
        self.requireLocation = requireLocation
        self.enforce = enforce
    }
}

extension Trigger {
    /// `trigger` from start to end: what cannot work is refused before the source is asked (a
    /// token that cannot be signed, 78; no audience, 64; a jwt endpoint with `--now`, 64), the
    /// record is made, its line handed to `write` and the record sent where `output` says (it
    /// waits in the spool if that fails); then the command's end is decided.
    ///
    /// The record is sent even when `write` fails (stdout gone): the failure is still the
    /// command's end, after the send.
    /// - Throws: `GeolocateError`: `.locationRequired` (3) and `.policyDenied` (4) after the
    ///   record was printed and sent; `.outputFailed` (74) from `write`; every error of `run`.
    @discardableResult
    package func respond(to request: TriggerRequest, output: TriggerOutput, mqtt: MQTTTransport?,
                         write: (String) throws -> Void) async throws -> Record {
        let settings = context.settings
        let endpoint = output.endpoint ?? (output.post == nil ? settings[ConfigKey.actionEndpoint, name: request.action] : nil)
        if let endpoint, try settings.endpoint(named: endpoint, configPath: context.configPath).format == .jwt {
            // A token dated by --now would carry a time that is not the device's (SPEC §3).
            if request.now != nil {
                throw GeolocateError.usage("--now cannot be used with a jwt endpoint (\(endpoint)): a token's times are the device's own")
            }
            _ = try TokenSigner(context)
        }
        let render = try renderer(output)
        let record = try await run(request)
        let line = try render(record)
        let printed = Result { try write(line) }
        if let target = output.post.map(Delivery.Target.url) ?? endpoint.map(Delivery.Target.endpoint) {
            let destination = output.post.map(ConfigStore.redactedURL) ?? endpoint ?? ""
            switch try await Delivery.post(record, to: target, context, role: .trigger, mqtt: mqtt) {
            case .delivered: break
            case .spooled(let reason):
                context.logger.warning("could not send the record to \(destination) (\(reason)); it is in the spool for the next flush")
            case .notCarried:
                context.logger.notice("the record has no location, which the format of \(destination) cannot carry; it was not sent")
            }
        }
        if output.requireLocation && record.fix == nil {
            throw GeolocateError.locationRequired(reason: "errorCode \(record.errorCode.rawValue) (--require-location)")
        }
        try printed.get()
        if output.enforce, let decision = record.policy, !LocationPolicy.passes(decision, settings: settings) {
            throw GeolocateError.policyDenied(decision)
        }
        return record
    }

    /// How the record is printed: in its record format, or for `jwt` signed by the device key
    /// (`--audience`, else `signing.audience`, else a usage error, 64; no key: 78).
    private func renderer(_ output: TriggerOutput) throws -> (Record) throws -> String {
        let settings = context.settings
        let policy = OutputPolicy(settings: settings)
        switch output.format {
        case .record(let recordFormat):
            let sender = recordFormat.namesTheDevice ? try Sender(settings: settings, stateDirectory: context.stateDirectory) : Sender()
            return { recordFormat.line($0, policy: policy, sender: sender) }
        case .jwt:
            guard let audience = output.audience ?? settings[ConfigKey.signingAudience] else {
                throw GeolocateError.usage("--format jwt needs --audience (or signing.audience): the server the token is for")
            }
            var signer = try TokenSigner(context)
            signer.audience = audience
            let nonce = output.nonce
            return { try signer.token(for: $0, policy: policy, nonce: nonce) }
        }
    }
}
