import Testing

extension Tag {
    /// Tests of the library in the test process, on injected clocks and prepared input (at
    /// most a short-lived oracle is asked, such as sha256sum or a Python script): the fast
    /// layer. Every suite of NMEATests, GPSDTests and GeolocateCoreTests has it, and none of
    /// GeolocateIntegrationTests, because `swift test --filter` (Swift 6.3.1) matches test
    /// ids, not tags: the layer runs as `swift test --filter '^(NMEATests|GPSDTests|GeolocateCoreTests)\.'`
    /// (README).
    @Tag static var unit: Self
    /// Tests that run the built binary or real servers (gpsd, mosquitto, collector.py, PAM)
    /// and wait on real time: every suite of GeolocateIntegrationTests, minutes in all.
    @Tag static var integration: Self
}
