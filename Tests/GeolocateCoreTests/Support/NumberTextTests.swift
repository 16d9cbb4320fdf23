@testable import GeolocateConfig
@testable import GeolocateCore
@testable import GeolocateDelivery
@testable import GeolocateModel
@testable import GeolocateSpool
import Testing

/// Numbers as typed: what `Double(_:)` reads beyond decimal notation is refused.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct NumberTextTests {
    @Test(arguments: ["2", "0.5", ".5", "5.", "-1", "1e3", "1E-3", "2.5e+2"])
    func decimalsAreAccepted(_ text: String) {
        #expect(NumberText.isDecimal(text))
    }

    @Test(arguments: ["", "0x10", "0x1p3", "nan", "inf", "-inf", "1e", "e5", "1.2.3", "1-2", "1 2", "1_000"])
    func everythingElseIsRefused(_ text: String) {
        #expect(!NumberText.isDecimal(text))
    }
}
