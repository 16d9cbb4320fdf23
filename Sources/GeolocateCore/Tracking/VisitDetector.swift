import GeolocateConfig
import GeolocateModel

/// Finds stays in a stream of fixes, as OpenLocate's visit monitoring does: a stay begins at a
/// fix (its anchor) and lasts while later fixes are within the radius of it; once it has lasted
/// the minimum duration it is a visit (`visit_entry`), and the first fix outside the radius ends
/// it (`visit_exit`) and anchors the next possible stay.
package struct VisitDetector: Sendable {
    package let settings: VisitSettings
    private var anchor: Fix?
    private var inVisit = false

    package init(settings: VisitSettings) { self.settings = settings }

    /// The visit event `fix` causes, if any.
    package mutating func observe(_ fix: Fix) -> LocationContext? {
        guard let anchor else {
            self.anchor = fix
            return nil
        }
        let away = Geodesy.greatCircle(anchor, fix) > settings.radiusMetres
        if inVisit {
            guard away else { return nil }
            inVisit = false
            self.anchor = fix
            return .visitExit
        }
        if away {
            self.anchor = fix
            return nil
        }
        guard fix.timestamp - anchor.timestamp >= settings.minDurationMilliseconds else { return nil }
        inVisit = true
        return .visitEntry
    }
}
