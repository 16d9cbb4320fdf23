@testable import GeolocateCore
import Testing

/// The answer to `?POLL;`, which libgps does not decode: its TPV objects are cut out for `gps_unpack`.
@Suite struct GPSDPollResponseTests {
    func objects(_ line: String) -> [String]? {
        GPSDPollResponse.tpvObjects(in: Array(line.utf8CString))?.map { String(decoding: $0.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self) }
    }

    @Test func everyTPVObjectIsFoundWhateverItsStrings() {
        let line = #"{"class":"POLL","active":2,"tpv":[{"class":"TPV","device":"/dev/a{b}\"]c","mode":3},{"class":"TPV","mode":1}],"sky":[{"class":"SKY"}]}"#
        #expect(objects(line) == [#"{"class":"TPV","device":"/dev/a{b}\"]c","mode":3}"#, #"{"class":"TPV","mode":1}"#])
    }

    @Test func aTruncatedObjectIsLeftOut() {
        #expect(objects(#"{"class":"POLL","tpv":[{"class":"TPV","mode":2},{"class":"TPV","mode":3,"lat":5"#)
                == [#"{"class":"TPV","mode":2}"#])
    }

    @Test func noDeviceMeansNoObjects() {
        #expect(objects(#"{"class":"POLL","time":"2026-11-22T05:28:51.303Z","active":0,"tpv":[],"gst":[],"sky":[]}"#) == [])
    }

    @Test func otherReportsAreNotPollAnswers() {
        #expect(objects(#"{"class":"TPV","device":"/dev/pts/1","mode":3}"#) == nil)
        #expect(objects(#"{"class":"SKY","tpv":[{"class":"TPV"}]}"#) == nil)
    }

    @Test func gpsdErrorFiguresBecome68PercentFigures() {
        #expect(abs(Accuracy.horizontal(eph95: 22.23) - 13.716) < 0.001)
        // epx/epy per-axis 95 %: sigma = ep / 1.96, r68 = 1.5096 x rms(sigma).
        #expect(abs(Accuracy.horizontal(epx95: 11.839, epy95: 22.993) - 1.5096 * ((pow2(11.839) + pow2(22.993)) / 2).squareRoot() / 1.96) < 1e-9)
        #expect(abs(Accuracy.vertical(epv95: 37.95) - 19.362) < 0.001)
    }

    private func pow2(_ x: Double) -> Double { x * x }
}
