/// Whole numbers for the formats that want them: OwnTracks' metres, km/h and degrees.
package enum WholeNumber {
    /// `value` rounded half away from zero, when finite and within ±2^53.
    package static func rounded(_ value: Double?) -> Int64? {
        guard let value, value.isFinite, abs(value) < 9_007_199_254_740_992 else { return nil }
        return Int64(value.rounded())
    }
}
