/// The UBX messages that carry a u-blox receiver's own verdicts on its fix (SPEC §15), decoded
/// from a frame's payload; every other message is `nil` to `init(_:)`.
///
/// Offsets and bit fields are those of u-blox's interface descriptions (M10 SPG 5.10, F9
/// HPG 1.32, X20 HPG 2.00), as PyPI's `pyubx2` 1.4.0 defines them too (the tests build their
/// packets with it): a payload shorter than a message's fixed part is no message.
public enum UBXMessage: Equatable, Sendable {
    /// UBX-NAV-PVT (0x01 0x07): the epoch's time and, in `flags3`, whether the fix and the
    /// time rest on OSNMA-authenticated navigation data.
    case navigationSolution(NavigationSolution)
    /// UBX-NAV-STATUS (0x01 0x03): `flags2.spoofDetState`, 0 unknown or off, 1 none,
    /// 2 spoofing indicated, 3 multiple indications.
    case navigationStatus(timeOfWeek: UInt32, spoofDetectionState: UInt8)
    /// UBX-NAV-SIG (0x01 0x43): how many of the signals carry `sigFlags.authStatus`.
    case signalInformation(timeOfWeek: UInt32, signals: Int, authenticated: Int)
    /// UBX-SEC-SIG (0x27 0x09), version 1 or 2: the jamming and spoofing states, each 0 unknown,
    /// 1 none, 2 warning / indicated, 3 critical / affirmed; `nil` when detection is off.
    case signalSecurity(jamming: UInt8?, spoofing: UInt8?)
    /// UBX-SEC-OSNMA (0x27 0x0A): Galileo OSNMA's state.
    case osnma(OSNMAReport)

    /// The messages' names in u-blox's documents, by `kind`.
    public static let names = ["NAV-PVT", "NAV-STATUS", "NAV-SIG", "SEC-SIG", "SEC-OSNMA"]

    /// The message's index in `names`.
    public var kind: Int {
        switch self {
        case .navigationSolution: 0
        case .navigationStatus: 1
        case .signalInformation: 2
        case .signalSecurity: 3
        case .osnma: 4
        }
    }

    /// The message's name in u-blox's documents.
    public var name: String { UBXMessage.names[kind] }

    /// NAV-PVT's part that places it in time and says what OSNMA authenticated.
    public struct NavigationSolution: Equatable, Sendable {
        /// GPS time of week, ms: what the other messages of the epoch carry.
        public var timeOfWeek: UInt32
        /// UTC time of day, ms (hour, minute, second and `nano` rounded to the millisecond),
        /// when `valid.validTime` says it is known; NMEA's epoch time is matched against it.
        public var timeOfDay: Int?
        /// `flags3.nmaFixStatus`, with `flags.gnssFixOK`: the fix rests on authenticated navigation data.
        public var fixAuthenticated: Bool
        /// `flags3.authTime`: the time rests on authenticated data.
        public var timeAuthenticated: Bool
    }

    /// SEC-OSNMA's fields geolocate reads.
    public struct OSNMAReport: Equatable, Sendable {
        /// `osnmaMonitoring.osnmaEnabled`.
        public var enabled: Bool
        /// `nmaHeader.nmaStatus`: 0 not yet known, 1 test, 2 operational, 3 don't use.
        public var status: UInt8
        /// `timeSyncReq.timSyncStatus`; 4 is a replay of the navigation message.
        public var timeSyncStatus: UInt8
        /// `generalAndTiming.authSVs`: satellites whose data were authenticated.
        public var authenticatedSatellites: Int
    }

    /// The message in `frame`, or `nil` for a message geolocate does not read or a payload too
    /// short for its fixed part (repeated groups beyond the payload are not read).
    public init?(_ frame: UBXFrame) {
        let payload = frame.payload
        switch (frame.messageClass, frame.messageID) {
        case (0x01, 0x07):
            guard payload.count >= 92 else { return nil }
            let tow = payload.littleEndian32(0), valid = payload[11], nano = payload.littleEndian32(16)
            let flags3 = payload.littleEndian16(78)
            var timeOfDay: Int?
            if valid & 0x02 != 0 {
                let hour = Int(payload[8]), minute = Int(payload[9]), second = Int(payload[10])
                let nanoseconds = Int(Int32(bitPattern: nano))
                if hour < 24, minute < 60, second <= 60, abs(nanoseconds) <= 1_000_000_000 {
                    // Rounded half away from zero; within a second of the day, so one day's
                    // shift at most brings it back into the day.
                    let fraction = (abs(nanoseconds) + 500_000) / 1_000_000
                    let milliseconds = (hour * 3600 + minute * 60 + second) * 1000 + (nanoseconds < 0 ? -fraction : fraction)
                    timeOfDay = milliseconds < 0 ? milliseconds + 86_400_000
                        : milliseconds >= 86_400_000 ? milliseconds - 86_400_000 : milliseconds
                }
            }
            // nmaFixStatus says of the fix; without gnssFixOK (flags bit 0) there is no valid
            // fix to be authenticated.
            let fixValid = payload[21] & 0x01 != 0
            self = .navigationSolution(NavigationSolution(
                timeOfWeek: tow, timeOfDay: timeOfDay, fixAuthenticated: fixValid && flags3 & (1 << 14) != 0,
                timeAuthenticated: flags3 & (1 << 13) != 0))
        case (0x01, 0x03):
            guard payload.count >= 16 else { return nil }
            self = .navigationStatus(timeOfWeek: payload.littleEndian32(0), spoofDetectionState: payload[7] >> 3 & 0x03)
        case (0x01, 0x43):
            guard payload.count >= 8 else { return nil }
            let tow = payload.littleEndian32(0)
            let declared = Int(payload[5])
            let signals = min(declared, (payload.count - 8) / 16)
            var authenticated = 0
            for index in 0..<signals {
                // authStatus, bit 1 of sigFlags' second byte; added without a branch, as
                // receivers mix authenticated and other signals in no order.
                authenticated += Int(payload[8 + 16 * index + 11] >> 1 & 1)
            }
            self = .signalInformation(timeOfWeek: tow, signals: signals, authenticated: authenticated)
        case (0x27, 0x09):
            // Versions 1 and 2 are known; another layout is not guessed at.
            guard payload.count >= 2, payload[0] == 1 || payload[0] == 2 else { return nil }
            if payload[0] == 2 {
                let flags = payload[1]
                self = .signalSecurity(jamming: flags & 0x01 != 0 ? flags >> 1 & 0x03 : nil,
                                       spoofing: flags & 0x08 != 0 ? flags >> 4 & 0x07 : nil)
            } else {
                guard payload.count >= 9 else { return nil }
                let jam = payload[4], spoof = payload[8]
                self = .signalSecurity(jamming: jam & 0x01 != 0 ? jam >> 1 & 0x03 : nil,
                                       spoofing: spoof & 0x01 != 0 ? spoof >> 1 & 0x07 : nil)
            }
        case (0x27, 0x0A):
            guard payload.count >= 20 else { return nil }
            self = .osnma(OSNMAReport(enabled: payload[2] & 0x01 != 0, status: payload[1] >> 1 & 0x03,
                                      timeSyncStatus: payload[3] >> 1 & 0x07, authenticatedSatellites: Int(payload[16] & 0x3F)))
        default:
            return nil
        }
    }
}
