import ArgumentParser
import Foundation
import GeolocateCore
import GeolocateDelivery
import Logging

/// swift-log handler printing `geolocate: LEVEL: message` lines on stderr, or, for
/// `trigger --pam` (whose stderr reaches the person logging in), writing them to the system log.
struct DiagnosticLogHandler: LogHandler {
    var logLevel: Logger.Level = .notice
    var metadata: Logger.Metadata = [:]
    var toSystemLog = false

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        if toSystemLog {
            SystemLog.write(event.level >= .error ? .error : .warning, "\(event.message)")
            return
        }
        let label = event.level == .notice ? "note" : event.level.rawValue
        StandardError.write("geolocate: \(label): \(event.message)", priority: DiagnosticLogHandler.priority(of: event.level))
    }

    /// The sd-daemon priority of a swift-log level (trace is debug, critical is crit).
    static func priority(of level: Logger.Level) -> StandardError.Priority {
        switch level {
        case .trace, .debug: return .debug
        case .info: return .info
        case .notice: return .notice
        case .warning: return .warning
        case .error: return .error
        case .critical: return .critical
        }
    }
}

enum DiagnosticLog {
    static func logger(verbose: Bool = false) -> Logger {
        var logger = Logger(label: "geolocate") { _ in DiagnosticLogHandler() }
        logger.logLevel = verbose ? .debug : .notice
        return logger
    }

    /// Warnings and errors to the system log (authpriv), nothing on stderr: `trigger --pam`.
    static func systemLogger() -> Logger {
        var logger = Logger(label: "geolocate") { _ in DiagnosticLogHandler(toSystemLog: true) }
        logger.logLevel = .warning
        return logger
    }
}
