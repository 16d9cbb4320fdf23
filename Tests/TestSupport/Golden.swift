import Foundation

/// The golden files (`Tests/GeolocateIntegrationTests/Golden/`) both test targets compare
/// output with: what differs between runs is masked before comparing.
public enum Golden {
    public static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("GeolocateIntegrationTests/Golden")

    /// `text` with the values that differ per run or machine replaced by their names: in JSON,
    /// and in an OsmAnd query (`id=` is the device id).
    public static func masked(_ text: String) -> String {
        var result = text
        for key in ["id", "deviceId", "device_id"] {
            let pattern = "\"\(key)\":\"[^\"]*\""
            result = result.replacingOccurrences(of: pattern, with: "\"\(key)\":\"<\(key)>\"", options: .regularExpression)
        }
        return result.replacingOccurrences(of: "([?&])id=[^& \n]*", with: "$1id=<deviceId>", options: .regularExpression)
    }

    /// `output` masked and the golden file `name`'s text, to compare; `nil` after writing
    /// `output` as the file instead (`GEOLOCATE_UPDATE_GOLDEN=1`: review the diff before
    /// committing it).
    public static func compared(_ name: String, _ output: String) throws -> (actual: String, golden: String)? {
        let file = directory.appendingPathComponent(name)
        let actual = masked(output)
        if ProcessInfo.processInfo.environment["GEOLOCATE_UPDATE_GOLDEN"] == "1" {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try actual.write(to: file, atomically: true, encoding: .utf8)
            return nil
        }
        return (actual, try String(contentsOf: file, encoding: .utf8))
    }
}
