import Foundation

/// Locations the tests read from: the project root, fixtures, and the shared gpsd corpus.
enum TestPaths {
    /// The package root, found from this file's path.
    static let projectRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// `../shared/corpus/gpsd/` beside the project, as CI provides it; `$GEOLOCATE_CORPUS` overrides.
    static var corpus: URL {
        if let override = ProcessInfo.processInfo.environment["GEOLOCATE_CORPUS"], !override.isEmpty {
            return URL(fileURLWithPath: override)
        }
        return projectRoot.deletingLastPathComponent().appendingPathComponent("shared/corpus/gpsd")
    }

    static func fixture(_ name: String) -> URL {
        projectRoot.appendingPathComponent("Tests/GeolocateCoreTests/Fixtures").appendingPathComponent(name)
    }
}
