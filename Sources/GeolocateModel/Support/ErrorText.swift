import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Our words for an error from the system or a library: one short lower-case phrase for
/// the end of a message line, such as "permission denied" or "no space left on device".
///
/// Foundation, GRDB and NIO describe errors for developers (`Error Domain=NSCocoaErrorDomain
/// Code=513 …`, `connection reset (error set): … (errno: 111)`); a user reads the cause.
package enum ErrorText {
    /// The cause `error` stands for; a `GeolocateError` is already in our words.
    package static func plain(_ error: Error) -> String {
        if let error = error as? GeolocateError { return error.description }
        if let error = error as? POSIXError { return posix(error.code.rawValue) }
        let nsError = error as NSError
        if nsError.domain == NSPOSIXErrorDomain { return posix(Int32(nsError.code)) }
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? Error { return plain(underlying) }
        if nsError.domain == NSCocoaErrorDomain { return cocoa(nsError.code) }
        return String(describing: error)
    }

    /// `strerror` of `code`, starting lower case to follow a colon.
    package static func posix(_ code: Int32) -> String {
        let text = String(cString: strerror(code))
        return text.prefix(1).lowercased() + text.dropFirst()
    }

    /// Foundation's file errors that carry no POSIX cause.
    private static func cocoa(_ code: Int) -> String {
        switch CocoaError.Code(rawValue: code) {
        case .fileNoSuchFile, .fileReadNoSuchFile: return "no such file or directory"
        case .fileReadNoPermission, .fileWriteNoPermission: return "permission denied"
        case .fileWriteOutOfSpace: return "no space left on device"
        case .fileWriteVolumeReadOnly: return "read-only file system"
        case .fileWriteFileExists: return "a file is in the way"
        case .fileReadCorruptFile, .coderReadCorrupt: return "unreadable contents"
        default: return "the file system refused (code \(code))"
        }
    }

    /// `text` with its control characters escaped (`\n`, `\r`, `\t`, `\u{1B}`): a path, URL or
    /// action name holding a newline or an escape sequence must not split a message into two
    /// lines, forge a second one, or drive the terminal. Format characters (a bidi override
    /// such as U+202E, which makes a value read backwards) and line or paragraph separators
    /// are escaped too, as the gate's syslog lines escape them (`Subject`).
    package static func oneLine(_ text: String) -> String {
        let escapedCategories: [Unicode.GeneralCategory] = [.control, .format, .lineSeparator, .paragraphSeparator]
        guard text.unicodeScalars.contains(where: { escapedCategories.contains($0.properties.generalCategory) }) else { return text }
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            case _ where escapedCategories.contains(scalar.properties.generalCategory):
                escaped += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }
}
