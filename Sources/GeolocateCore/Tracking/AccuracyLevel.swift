import GeolocateModel

/// `--accuracy`: the worst 68 % radius a fix may have to be collected (iOS's desired accuracy levels).
package enum AccuracyLevel: String, Sendable, CaseIterable {
    /// Every fix, whatever its accuracy (also one that reports none).
    case best
    case tenMetres = "10m"
    case hundredMetres = "100m"
    case kilometre = "1km"
    case threeKilometres = "3km"

    package var maximumMetres: Double? {
        switch self {
        case .best: return nil
        case .tenMetres: return 10
        case .hundredMetres: return 100
        case .kilometre: return 1000
        case .threeKilometres: return 3000
        }
    }

    /// Whether `fix` is good enough; a fix without an accuracy passes only `best`.
    package func accepts(_ fix: Fix) -> Bool {
        guard let maximum = maximumMetres else { return true }
        guard let accuracy = fix.horizontalAccuracy else { return false }
        return accuracy <= maximum
    }
}
