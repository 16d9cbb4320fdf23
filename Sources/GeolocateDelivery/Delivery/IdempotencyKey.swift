import Crypto
import GeolocateConfig
import GeolocateModel

/// The `Idempotency-Key` of a batch: the same for the same records to the same endpoint, so a
/// retry (in this run or after a crash) is recognisably the same request.
///
/// It is a version 8 UUID (RFC 9562) made of the first 122 bits of the SHA-256 of the endpoint's
/// name and the records' ids, one per line: a UUID because receivers that check the header
/// often expect one, SHA-256 so that different batches never share a key.
package enum IdempotencyKey {
    /// The key of a request carrying `ids` to `endpoint`, whether `trigger --post`/`--endpoint`
    /// sends it or flush sends it again: one record to a `mosaic`, `owntracks` or `osmand` endpoint (one record per
    /// request) is keyed by its own id, everything else by `make`.
    package static func of(_ ids: [String], to endpoint: Endpoint) -> String {
        endpoint.format.sendsOneRecordPerRequest && ids.count == 1 ? ids[0] : make(endpoint: endpoint.name, ids: ids)
    }

    package static func make(endpoint: String, ids: [String]) -> String {
        var hash = SHA256()
        hash.update(data: Array(endpoint.utf8))
        for id in ids { hash.update(data: Array(("\n" + id).utf8)) }
        return Record.uuidText(Array(hash.finalize().prefix(16)), version: 8)
    }
}
