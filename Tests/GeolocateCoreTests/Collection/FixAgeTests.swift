import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Logging
import Testing

/// SPEC §3, "Clocks that disagree": a live fix ages from its arrival, on the monotonic clock
/// within one boot; across boots on the system clock, unknown when it arrived after "now".
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct FixAgeTests {
    let start: Int64 = 1_795_248_000_000

    func live(dated timestamp: Int64, arrived: Int64, boot: String? = "boot-a", uptime: Int64? = 10_000) -> Fix {
        var fix = Fix(timestamp: timestamp, latitude: 1, longitude: 1, mode: .threeD, provider: .gpsd)
        fix.receivedAt = arrived
        fix.receivedBoot = boot
        fix.receivedUptime = uptime
        return fix
    }

    @Test func aReplayedFixAgesFromItsTime() {
        let fix = Fix(timestamp: start, latitude: 1, longitude: 1, mode: .twoD, provider: .nmeaReplay)
        #expect(FixAge.of(fix, at: start + 5_000, boot: nil) == 5_000)
        #expect(FixAge.of(fix, at: start - 1, boot: nil) == nil)
    }

    @Test func aLiveFixAgesFromItsArrivalWhateverItsTime() {
        // A receiver 20 s ahead and one dated 2034: both arrived 3 s before "now".
        for timestamp in [start + 20_000, start + 619_315_200_000, start - 86_400_000 * 3] {
            #expect(FixAge.of(live(dated: timestamp, arrived: start, boot: nil), at: start + 3_000, boot: nil) == 3_000)
        }
    }

    @Test func withinOneBootTheMonotonicClockDecides() {
        let fix = live(dated: start, arrived: start)
        // The system clock was stepped back an hour since: the monotonic clock still says 4 s.
        #expect(FixAge.of(fix, at: start - 3_600_000, boot: BootTime(id: "boot-a", uptimeMilliseconds: 14_000)) == 4_000)
        // And stepped forward a day: still 4 s.
        #expect(FixAge.of(fix, at: start + 86_400_000, boot: BootTime(id: "boot-a", uptimeMilliseconds: 14_000)) == 4_000)
    }

    @Test func fromAnEarlierBootAnArrivalAfterNowIsUnknown() {
        let fix = live(dated: start, arrived: start)
        let otherBoot = BootTime(id: "boot-b", uptimeMilliseconds: 5_000)
        #expect(FixAge.of(fix, at: start + 60_000, boot: otherBoot) == 60_000)
        #expect(FixAge.of(fix, at: start - 60_000, boot: otherBoot) == nil)
    }

    @Test func theStoreKeepsTheLaterArrivalAndIsNeverWedged() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fixage-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = LastKnownStore(stateDirectory: directory, kind: .live, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        // A 2099-dated fix arrives first; a fix of today arriving later replaces it.
        try store.update(with: live(dated: 4_070_908_800_000, arrived: start), now: start)
        try store.update(with: live(dated: start + 1_000, arrived: start + 1_000), now: start + 1_000)
        #expect(try store.load(now: start + 1_000)?.timestamp == start + 1_000)
        // An older arrival does not replace it, whatever its date.
        try store.update(with: live(dated: start + 50_000, arrived: start + 500), now: start + 2_000)
        #expect(try store.load(now: start + 2_000)?.timestamp == start + 1_000)
        // The clock was set back: the stored fix arrived "after now", and any fix replaces it.
        try store.update(with: live(dated: start - 7_200_000, arrived: start - 7_200_000), now: start - 7_200_000)
        #expect(try store.load(now: start - 7_200_000)?.timestamp == start - 7_200_000)
    }
}
