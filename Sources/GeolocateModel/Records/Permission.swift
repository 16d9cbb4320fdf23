import Foundation

/// A location permission, the consent analogue of Android's fine and coarse location.
package enum Permission: String, Sendable, Codable, CaseIterable {
    case fine
    case coarse

    /// The strongest permission granted: fine beats coarse; `nil` when none is granted.
    package static func effective(_ granted: [Permission]) -> Permission? {
        granted.contains(.fine) ? .fine : granted.contains(.coarse) ? .coarse : nil
    }

    /// Parses a list given as `fine`, `fine,coarse`, `none`, an empty string or a JSON array.
    package static func parseList(_ text: String) throws -> [Permission] {
        var items = try ListText.items(text)
        if items == ["none"] { items = [] }
        return try items.map { item in
            guard let permission = Permission(rawValue: item) else {
                throw GeolocateError.usage("unknown permission '\(item)' (valid: fine, coarse, none)")
            }
            return permission
        }
    }
}

/// Coarse location: coordinates snapped to the centre of a grid cell of about 2 km.
package enum CoarseLocation {
    /// The cell size in metres; a coarse fix reports at least this accuracy.
    package static let cellSize = 2000.0
    private static let metresPerDegree = 111_320.0

    /// Snaps a fix to its cell centre, raises the accuracy to the cell size and drops
    /// altitude, speed and course, which would give away more than the cell.
    package static func coarsen(_ fix: Fix) -> Fix {
        let latitudeStep = cellSize / metresPerDegree
        let row = (fix.latitude / latitudeStep).rounded(.down)
        let latitude = min(max((row + 0.5) * latitudeStep, -90), 90)
        let cosine = max(cos(latitude * .pi / 180), 0.01)
        let longitudeStep = latitudeStep / cosine
        let column = (fix.longitude / longitudeStep).rounded(.down)
        var longitude = (column + 0.5) * longitudeStep
        if longitude > 180 { longitude -= 360 }
        var snapped = Fix(timestamp: fix.timestamp, latitude: latitude, longitude: longitude,
                          mode: .twoD, provider: fix.provider)
        snapped.horizontalAccuracy = max(fix.horizontalAccuracy ?? cellSize, cellSize)
        return snapped
    }
}
