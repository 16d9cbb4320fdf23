/// Why an address could not be found; the record still goes out, with errorCode 1053.
package enum GeocodingError: Error, Equatable, CustomStringConvertible {
    /// The offline gazetteer file is missing or damaged.
    case gazetteerUnavailable(path: String, reason: String)
    /// `geocoder.minInterval` has not passed since the last request and the cell is not cached.
    case throttled(retryInMilliseconds: Int64)
    /// The HTTP geocoder did not answer, or answered with an error or something unreadable.
    case serviceFailed(String)
    /// The geocoder's cache and throttle file in the state directory cannot be written.
    case cacheNotWritable(String)

    package var description: String {
        switch self {
        case .gazetteerUnavailable(let path, let reason):
            return "the offline gazetteer \(path) cannot be used: \(reason) (reinstall geolocate, or set GEOLOCATE_GAZETTEER)"
        case .throttled(let wait):
            return "the street geocoder was asked less than geocoder.minInterval ago (next request in \(DurationText.format(wait)))"
        case .serviceFailed(let reason):
            return "the street geocoder failed: \(reason)"
        case .cacheNotWritable(let reason):
            return "the street geocoder was not asked, its throttle cannot be kept: \(reason)"
        }
    }
}
