/// Why the reported location is not a current one.
package enum FallbackReason: String, Sendable, Codable {
    /// No fix arrived within the query timeout.
    case timeout
    /// The source could not be reached.
    case unavailable
}

/// Whether the reported location was queried now or remembered.
package enum LocationOrigin: String, Sendable, Codable {
    case current
    case lastKnown = "last_known"
}

/// Veridium error codes carried in every record.
package enum LocationErrorCode: Int, Sendable, Codable {
    case none = 0
    case geocodingFailed = 1053
    case unavailable = 1054
    case permissionDenied = 1055
    case timeout = 1056
}
