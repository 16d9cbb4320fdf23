import GeolocateModel

/// Writes one record in one wire format.
///
/// An encoder is a pure function of the record: it writes what the record holds and its
/// `attributes` allow, and nothing else decides. Callers go through `RecordFormat` or
/// `EndpointFormat`, which first limit the record by the `OutputPolicy` in force.
package protocol RecordEncoder {
    /// Writes `record` as one JSON object.
    static func write(_ record: Record, to json: inout JSONWriter)
}
