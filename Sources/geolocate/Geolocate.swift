import ArgumentParser
import Foundation
import GeolocateCore
import Logging

@main
struct Geolocate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "geolocate",
        abstract: "Collect a device's location from gpsd or NMEA replay files and report it as JSON records.",
        discussion: """
            Sources: gpsd through libgps (--source gpsd or gpsd://HOST:PORT; the default), or an \
            NMEA-0183 replay (--replay FILE, - for stdin). A replay runs on virtual time taken \
            from the NMEA timestamps, so a 1.5 s timeout is 1.5 s of log time; with the default \
            --replay-speed asap it takes no wall time. A replayed log keeps its own dates \
            (gpsd 3.22 moves pre-2017 dates 1024 weeks later; geolocate does not). A fix needs a \
            date (RMC or ZDA); GGA quality 0, 7 or 8, RMC/GLL status V and GSA mode 1 mean no fix.

            gpsd: geolocate connects with libgps, starts a JSON watch and asks ?POLL; for the fix \
            gpsd holds (about 1 ms); force-current reports it when it is at most currentMaxAge \
            (2 s) old, else waits for gpsd's next TPV report for the rest of the query timeout \
            (connecting counts against it). Only reports with a 2D/3D mode, a time and finite \
            coordinates are fixes; gpsd's simulated status is not reported. The last known \
            location is the fresher of gpsd's ?POLL; fix and the state file. gpsd must accept the \
            connection within 1 s (or the timeout when shorter); refused, silent or dying \
            mid-read, it is unavailable at once: fallbackReason unavailable, one warning naming \
            gpsd://HOST:PORT. A gpsd still opening its device for its first client answers ?POLL; \
            late; that is not unavailable, force-current just waits. recordTimestamp is the \
            receiver's time as gpsd reports it.

            Accuracy: the record's accuracy is the radius of 68 % confidence in metres. From GST: \
            1.5096 x sqrt((sigma_lat^2 + sigma_lon^2) / 2). Otherwise from HDOP: \
            1.5096 x HDOP x UERE / sqrt(2) with UERE = 5 m (about 5.34 x HDOP). From gpsd, whose \
            eph, epx, epy and epv are 95 % figures: eph x 0.617 (r68 = r95 x 0.617 for a circular \
            normal error), or when eph is missing 1.5096 x sqrt((epx^2 + epy^2) / 2) / 1.96. \
            verticalAccuracy is one sigma: GST's altitude sigma, else VDOP x 5 m, from gpsd \
            epv / 1.96. altitude is metres above the WGS-84 ellipsoid: gpsd's altHAE (never its \
            deprecated altitude), or from NMEA GGA's MSL altitude plus its geoid separation, or gpsd's 5-degree EGM2008 grid when GGA leaves \
            the separation empty. Coarse permission snaps coordinates to the centre of a ~2 km \
            cell, reports accuracy of at least 2000 m and drops altitude, speed and course.

            Privacy: privacy.precision (NONE, COUNTRY, DISTRICT, CITY, STREET, STREET_NUMBER, \
            GPS_LOCATION; default GPS_LOCATION) limits every record, printed, spooled or sent, \
            in every format (flush also strips records spooled under a wider level): each level reports the address parts at or above it (countryCode, \
            district, city, street, streetNumber); coordinates, altitude, speed, course and \
            verticalAccuracy only at GPS_LOCATION; accuracy, provider, permissions, \
            recordTimestamp and fixMode at every level. privacy.locationAttributeFilter narrows \
            that to the fields named (coordinates = latitude and longitude). Country, district \
            (first-level division) and city come from an offline gazetteer: the nearest of \
            GeoNames' 144,561 places of 1,000 people or more (CC BY 4.0), in \
            share/geolocate/gazetteer.bin (or $GEOLOCATE_GAZETTEER). countryCode is reported \
            only from a fix whose accuracy is at most privacy.accuracyThreshold (50 m); from a \
            less accurate or unknown one it is privacy.countryCodeReplacement (XB); district and \
            city still are. Street and number come from geocoder.url, a Nominatim server \
            (GET URL/reverse?format=jsonv2), when one is set: at most one request per \
            geocoder.minInterval (60 s) across all processes, answers cached 30 days in the \
            state directory by cell of 0.0001 degree (about 11 m). When an address part that is \
            asked for cannot be had (gazetteer unreadable, geocoder failing, unreachable or \
            throttled with the cell not cached) the record still goes out, with its location \
            and errorCode 1053, and one warning on stderr. Addresses are looked up from the \
            coordinates as reported, so a coarse location gets a coarse address.

            Files: the configuration file ($GEOLOCATE_CONFIG, else \
            $XDG_CONFIG_HOME/geolocate/config.json, else ~/.config/geolocate/config.json) and the \
            state directory ($GEOLOCATE_STATE_DIR, else $XDG_STATE_HOME/geolocate, else \
            ~/.local/state/geolocate) holding last-known.json, the freshest fix any command saw, \
            spool.sqlite, the records track collects (SQLite, WAL mode, mode 0600), device-id, \
            the random per-install id track records carry instead of any advertising id, and \
            geocoder-cache.sqlite, the street geocoder's answers and throttle. \
            $GEOLOCATE_SOURCE sets the source when no flag does.

            Exit codes: 0 success, 3 --require-location and no location, 64 usage error, \
            65 unreadable data, 66 input file missing, 69 source unavailable, \
            73 state file or spool not writable, 74 standard output not writable, \
            75 temporary failure, 78 configuration error \
            (also track without a location permission).
            """,
        version: Defaults.version,
        subcommands: [TriggerCommand.self, TrackCommand.self, FlushCommand.self, StatusCommand.self, ExportCommand.self, ConfigCommand.self]
    )

    /// Runs the command as the argument parser's own `main` does, except that a usage error
    /// is one line, as every other message of ours (SPEC §8): `geolocate: MESSAGE (see
    /// 'geolocate trigger --help')`, its control characters escaped (it may quote what the
    /// user typed), instead of the parser's `Error:`, `Help:` and `Usage:` lines.
    static func main() async {
        // A reader that went away is an error return of write (EPIPE), not death by SIGPIPE:
        // trigger must still spool or send the record it could not print.
        signal(SIGPIPE, SIG_IGN)
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            let full = fullMessage(for: error)
            guard code != .success, !full.isEmpty else { exit(withError: error) }
            let short = Geolocate.flagMessage(message(for: error))
            guard code == .validationFailure, !short.isEmpty else {
                FileHandleOutput.stderr(full.replacingOccurrences(of: short, with: StandardError.oneLine(short)) + "\n")
                Foundation.exit(code.rawValue)
            }
            let help = full.range(of: "See '").flatMap { start in
                full[start.upperBound...].firstIndex(of: "'").map { " (see '\(full[start.upperBound..<$0])')" }
            } ?? ""
            StandardError.write("geolocate: \(short)\(help)")
            Foundation.exit(code.rawValue)
        }
    }
}

extension Geolocate {
    /// The parser's "The value 'X' is invalid for '--flag <value>': REASON" as "--flag: REASON":
    /// our reasons quote the value themselves, redacted where it holds a secret (`--post`).
    static func flagMessage(_ message: String) -> String {
        guard message.hasPrefix("The value '"), let forRange = message.range(of: "' is invalid for '"),
              let reasonStart = message.range(of: "': ", range: forRange.upperBound..<message.endIndex) else { return message }
        let flag = message[forRange.upperBound..<reasonStart.lowerBound].prefix { $0 != " " }
        let reason = message[reasonStart.upperBound...]
        return reason.hasPrefix(flag) ? String(reason) : "\(flag): \(reason)"
    }
}

/// Runs a core call, turning a `GeolocateError` into one line on stderr and its exit code.
func runReportingErrors(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let error as GeolocateError {
        StandardError.write("geolocate: \(error.description)")
        throw ExitCode(error.exitCode)
    }
}

/// `runReportingErrors` for commands that wait on the network.
func runReportingErrors(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as GeolocateError {
        StandardError.write("geolocate: \(error.description)")
        throw ExitCode(error.exitCode)
    }
}

/// Writes diagnostics to stderr, one line each, never to stdout.
enum StandardError {
    static func write(_ line: String) {
        FileHandleOutput.stderr(oneLine(line) + "\n")
    }

    /// `text` with its control characters escaped (`\n`, `\r`, `\t`, `\u{1B}`): a path, URL or
    /// action name holding a newline or an escape sequence must not split a message into two
    /// lines, forge a second one, or drive the terminal.
    static func oneLine(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return text }
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            case _ where scalar.properties.generalCategory == .control:
                escaped += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }
}

/// swift-log handler printing `geolocate: LEVEL: message` lines on stderr.
struct StderrLogHandler: LogHandler {
    var logLevel: Logger.Level = .notice
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let label = event.level == .notice ? "note" : event.level.rawValue
        StandardError.write("geolocate: \(label): \(event.message)")
    }
}

enum DiagnosticLog {
    static func logger(verbose: Bool = false) -> Logger {
        var logger = Logger(label: "geolocate") { _ in StderrLogHandler() }
        logger.logLevel = verbose ? .debug : .notice
        return logger
    }
}
