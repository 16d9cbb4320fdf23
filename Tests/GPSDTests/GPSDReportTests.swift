import GeolocateModel
@testable import GPSD
import NMEA
import Testing

/// gpsd's lines as libgps is given them: TPVs (alone or in a POLL answer, which libgps does
/// not decode) rewritten flat with the fields geolocate reads, everything else left out.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct GPSDReportTests {
    func text(_ tpv: [CChar]) -> String { String(decoding: tpv.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self) }

    func polled(_ line: String) -> [String]? {
        guard case .poll(let tpvs, _, _) = GPSDReport(line: Array(line.utf8)) else { return nil }
        return tpvs.map { text($0.flat) }
    }

    func position(_ line: String) -> String? {
        guard case .position(let tpv) = GPSDReport(line: Array(line.utf8)) else { return nil }
        return text(tpv.flat)
    }

    @Test func everyTPVOfAPollAnswerIsRewrittenFlat() {
        let line = #"{"class":"POLL","active":2,"tpv":[{"class":"TPV","device":"/dev/a{b}\"]c","mode":3,"lat":53.5,"time":"2026-11-22T05:28:51.000Z"},{"class":"TPV","mode":1}],"sky":[{"class":"SKY"}]}"#
        #expect(polled(line) == [#"{"class":"TPV","mode":3,"time":"2026-11-22T05:28:51.000Z","lat":53.5}"#, #"{"class":"TPV","mode":1}"#])
    }

    /// gpsd 3.26 and later add the receiver's jamming indicator and antenna state to a TPV,
    /// which libgps 3.22 does not decode: they are read beside the flat TPV, and values out
    /// of gpsd's range are unknown.
    @Test(arguments: [
        (#"{"class":"TPV","mode":3,"jam":143,"ant":2,"antPwr":2}"#, 143, Fix.Antenna.open, Fix.AntennaPower.on),
        (#"{"class":"TPV","mode":3,"jam":0,"ant":1,"antPwr":1}"#, 0, .ok, .off),
        (#"{"class":"TPV","mode":3,"ant":3}"#, nil, .short, nil),
        (#"{"class":"TPV","mode":3,"jam":256,"ant":0,"antPwr":0}"#, nil, nil, nil),
        (#"{"class":"TPV","mode":3,"jam":-1,"ant":4,"antPwr":3}"#, nil, nil, nil),
        (#"{"class":"TPV","mode":3,"jam":12.5,"ant":"2","antPwr":"2"}"#, nil, nil, nil),
    ] as [(String, Int?, Fix.Antenna?, Fix.AntennaPower?)])
    func receiverHealthBesideTheTPV(_ line: String, _ jamming: Int?, _ antenna: Fix.Antenna?, _ power: Fix.AntennaPower?) {
        guard case .position(let tpv) = GPSDReport(line: Array(line.utf8)) else {
            Issue.record("not a TPV")
            return
        }
        #expect(tpv.jamming == jamming && tpv.antenna == antenna && tpv.antennaPower == power)
        #expect(text(tpv.flat) == #"{"class":"TPV","mode":3}"#)
    }

    @Test func skySatellitesUsedAndTheirSignalStrength() {
        let line = #"{"class":"SKY","satellites":[{"PRN":1,"ss":40,"used":true},{"PRN":2,"ss":44.5,"used":true},{"PRN":3,"ss":20,"used":false},{"PRN":4,"ss":"x","used":true},{"PRN":5,"used":true}]}"#
        guard case .sky(let satellites?) = GPSDReport(line: Array(line.utf8)) else {
            Issue.record("not a SKY")
            return
        }
        #expect(satellites.used == 4 && satellites.measured == 2)
        #expect(satellites.cn0Mean == 42.25 && satellites.cn0StdDev == 2.25)
        guard case .sky(nil) = GPSDReport(line: Array(#"{"class":"SKY","satellites":"none"}"#.utf8)) else {
            Issue.record("a SKY without a list has no satellites")
            return
        }
    }

    @Test func fieldsOfTheWrongTypeAreLeftOut() {
        #expect(position(#"{"class":"TPV","mode":"3","status":2.5,"lat":"53","lon":-6.25,"time":7,"eph":[1],"speed":null}"#)
                == #"{"class":"TPV","lon":-6.25}"#)
        #expect(position(#"{"class":"TPV","mode":3,"time":"2026-11-22T05:28:51\"Z"}"#) == #"{"class":"TPV","mode":3}"#)
    }

    /// gpsd's own times pass; an impossible date, which libgps would read as another date,
    /// is left out (so the TPV is no fix), as is a year beyond four digits.
    @Test(arguments: [("2026-11-22T05:28:51.000Z", true), ("2026-02-28T23:59:60.5Z", true),
                      ("2026-02-30T12:00:00.000Z", false), ("9999-99-99T99:99:99Z", false),
                      ("2026-11-22T25:61:61.000Z", false), ("275760-09-13T00:00:00.000Z", false)])
    func onlyRealTimesReachLibgps(time: String, kept: Bool) {
        let flat = position(#"{"class":"TPV","mode":3,"time":"\#(time)","lat":53.5,"lon":-6.5}"#)
        #expect(flat?.contains(#""time":"\#(time)""#) == kept, "\(flat ?? "nil")")
    }

    @Test func aTruncatedOrMalformedLineIsNothing() {
        for line in [#"{"class":"POLL","tpv":[{"class":"TPV","mode":2},{"class":"TPV","mode":3,"lat":5"#,
                     #"{s"class":"TPV"}"#, "not json", "[]", ""] {
            #expect(polled(line) == nil && position(line) == nil, "\(line)")
        }
    }

    /// A TPV inside another kind of object made libgps loop forever (a fuzz finding).
    @Test func aTPVInsideAnotherObjectIsNothing() {
        #expect(position(#"{"":[{"class":"TPV","mode":1},{"class":"TPV","status":8,"mode":1}],"gst":[],"sky":[]}"#) == nil)
    }

    @Test func noDeviceMeansNoObjects() {
        #expect(polled(#"{"class":"POLL","time":"2026-11-22T05:28:51.303Z","active":0,"tpv":[],"gst":[],"sky":[]}"#) == [])
    }

    @Test func otherReportsAreNotPositions() {
        #expect(position(#"{"class":"SKY","tpv":[{"class":"TPV"}]}"#) == nil)
        #expect(polled(#"{"class":"SKY","tpv":[{"class":"TPV"}]}"#) == nil)
    }

    @Test func gpsdErrorFiguresBecome68PercentFigures() {
        #expect(abs(Accuracy.horizontal(eph95: 22.23) - 13.716) < 0.001)
        // epx/epy per-axis 95 %: sigma = ep / 1.96, r68 = 1.5096 x rms(sigma).
        #expect(abs(Accuracy.horizontal(epx95: 11.839, epy95: 22.993) - 1.5096 * ((pow2(11.839) + pow2(22.993)) / 2).squareRoot() / 1.96) < 1e-9)
        #expect(abs(Accuracy.vertical(epv95: 37.95) - 19.362) < 0.001)
    }

    private func pow2(_ x: Double) -> Double { x * x }
}
