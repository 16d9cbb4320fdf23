import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool

extension Spool {
    /// The spooled records as Mosaic lines, what a `mosaic-ndjson` endpoint would receive.
    func mosaicLines() throws -> [String] {
        try records().map { RecordFormat.mosaic.line($0, policy: .unrestricted) }
    }
}
