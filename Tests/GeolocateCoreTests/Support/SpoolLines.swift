@testable import GeolocateConfig
@testable import GeolocateCore
@testable import GeolocateDelivery
@testable import GeolocateModel
@testable import GeolocateSpool

extension Spool {
    /// The spooled records as Mosaic lines, what a `mosaic-ndjson` endpoint would receive.
    func mosaicLines() throws -> [String] {
        try records().map { RecordFormat.mosaic.line($0, policy: .unrestricted) }
    }
}
