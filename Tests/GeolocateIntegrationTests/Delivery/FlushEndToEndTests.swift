import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Logging
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `geolocate flush` and `trigger --post` against a real HTTP collector on 127.0.0.1 that the
/// tests script per request: every record must arrive, and a duplicate only under the same
/// Idempotency-Key.
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .serialized) struct FlushEndToEndTests {
    let geolocate = GeolocateProcess()
    let drive = GeolocateProcess.example("maynooth-drive.nmea")

    /// Spools the 120 fixes of the drive log and returns their ids in spool order.
    func spoolDrive() throws -> [String] {
        let result = try geolocate.run(["track", "--replay", drive, "--every-fix", "--stdout", "--permission", "fine"])
        try #require(result.status == 0, "\(result.stderr)")
        return result.stdout.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["id"] as? String
        }
    }

    func configure(_ collector: Collector, _ endpoints: [String: [String: String]]) throws {
        for (name, settings) in endpoints {
            for (key, value) in settings {
                let result = try geolocate.run(["config", "set", "endpoints.\(name).\(key)", value.replacingOccurrences(of: "COLLECTOR", with: collector.url(""))])
                try #require(result.status == 0, "\(result.stderr)")
            }
        }
    }

    func flush(_ extra: [String] = []) throws -> (status: Int32, report: [String: [String: Any]], stderr: String) {
        let result = try geolocate.run(["flush", "--json"] + extra)
        return (result.status, Self.report(result.stdout), result.stderr)
    }

    /// `flush --json` by endpoint name.
    static func report(_ stdout: String) -> [String: [String: Any]] {
        var report: [String: [String: Any]] = [:]
        if let document = try? JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any] {
            for endpoint in document["endpoints"] as? [[String: Any]] ?? [] {
                if let name = endpoint["name"] as? String { report[name] = endpoint }
            }
        }
        return report
    }

    func spooledCount() throws -> Int { try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock()).count() }

    /// Each id accepted more than once was accepted under one Idempotency-Key only.
    func expectDuplicatesShareAKey(_ collector: Collector, _ path: String, sourceLocation: SourceLocation = #_sourceLocation) {
        var keys: [String: Set<String>] = [:]
        for request in collector.requests(path) where (200..<300).contains(request.status ?? 0) {
            for id in request.ids { keys[id, default: []].insert(request.key ?? "") }
        }
        #expect(keys.values.allSatisfy { $0.count == 1 }, sourceLocation: sourceLocation)
    }

    @Test func everyRecordArrivesAtEveryEndpointInOrder() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try configure(collector, ["a": ["url": "COLLECTOR/a", "batchSize": "50", "headers.Authorization": "Bearer s3cret"],
                                  "b": ["url": "COLLECTOR/b", "format": "mosaic-ndjson"]])
        let ids = try spoolDrive()
        let result = try geolocate.run(["flush", "--json", "--verbose"])
        let report = Self.report(result.stdout)
        #expect(result.status == 0, "\(result.stderr)")
        // The header's value reaches the collector, never the output, the logs or config show.
        for text in [result.stdout, result.stderr, try geolocate.run(["config", "show"]).stdout] {
            #expect(!text.contains("s3cret"))
        }
        #expect(collector.acceptedIDs("/a") == ids)
        #expect(collector.acceptedIDs("/b") == ids)
        #expect(collector.requests("/a").count == 3)  // 50 + 50 + 20
        #expect(collector.requests("/a").allSatisfy { $0.contentType == "application/json" && $0.headers["Authorization"] == "Bearer s3cret" })
        #expect(collector.requests("/b").allSatisfy { $0.contentType == "application/x-ndjson" })
        #expect(Set(collector.requests().compactMap(\.key)).count == collector.requests().count)
        #expect(report["a"]?["sent"] as? Int == 120 && report["b"]?["sent"] as? Int == 120)
        #expect(report["a"]?["pending"] as? Int == 0)
        #expect(try spooledCount() == 0)
        // Nothing left: a second flush sends nothing and succeeds.
        #expect(try flush().status == 0)
        #expect(collector.requests().count == 4)
    }

    @Test func openLocateBodiesCarryNumbersAndSnakeCase() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try configure(collector, ["a": ["url": "COLLECTOR/a"]])
        _ = try spoolDrive()
        // The collector logs ids only; render the spool's first record as flush sends it.
        let first = try #require(try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock()).records().first)
        let body = try EndpointFormat.openlocate.body(for: [first], policy: .unrestricted)
        let document = try #require(JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        let location = try #require((document["locations"] as? [[String: Any]])?.first)
        #expect(location["latitude"] as? Double == 53.3613367)
        #expect(location["utc_timestamp"] as? Int == 1_795_248_008)
        #expect(location["location_context"] as? String == "regular")
        #expect(location["horizontal_accuracy"] is Double && location["device_id"] is String)
        #expect(try flush().status == 0)
    }

    @Test func serverErrorsAreRetriedUnderTheSameKey() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/a": ["script": [["status": 500], ["status": 503], ["close": true]]]])
        try configure(collector, ["a": ["url": "COLLECTOR/a", "batchSize": "200"]])
        let ids = try spoolDrive()
        let (status, _, stderr) = try flush()
        #expect(status == 0, "\(stderr)")
        let requests = collector.requests("/a")
        #expect(requests.count == 4)
        #expect(Set(requests.compactMap(\.key)).count == 1)
        #expect(collector.acceptedIDs("/a") == ids)
    }

    /// One record a request, read 100 at a time: when the endpoint starts failing after 37
    /// answers, exactly those 37 records have left the spool, and the rest wait in order.
    @Test func oneRecordARequestLeavesExactlyTheAnsweredRecords() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/a": ["script": Array(repeating: ["status": 200], count: 37), "default": ["status": 503]]])
        try configure(collector, ["a": ["url": "COLLECTOR/a", "format": "mosaic"]])
        let ids = try spoolDrive()
        let (status, report, stderr) = try flush()
        #expect(status == 75, "\(stderr)")
        #expect(collector.acceptedIDs("/a") == Array(ids.prefix(37)))
        #expect(report["a"]?["sent"] as? Int == 37)
        let left = try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock())
            .records(for: "a", after: 0, limit: 1000).map(\.record.id)
        #expect(left == Array(ids.dropFirst(37)))
    }

    @Test func retryAfterIsHonoured() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/a": ["script": [["status": 429, "retryAfter": "2"]]]])
        try configure(collector, ["a": ["url": "COLLECTOR/a", "batchSize": "200"]])
        _ = try spoolDrive()
        let started = ContinuousClock.now
        #expect(try flush().status == 0)
        #expect(started.duration(to: .now) >= .seconds(2))
        #expect(collector.requests("/a").count == 2)

        // A Retry-After longer than a flush waits: pending now, and the next flush before then sends nothing.
        _ = try spoolDrive()
        try collector.script(["/a": ["script": [["status": 503, "retryAfter": "3600"]]]])
        let long = try flush()
        #expect(long.status == 75)
        #expect(long.report["a"]?["pending"] as? Int == 120)
        #expect(collector.requests("/a").count == 3)
        #expect(try flush().status == 75)
        #expect(collector.requests("/a").count == 3)
    }

    /// A Retry-After parks the URL that sent it, not the endpoint's name: once the user points
    /// the endpoint elsewhere, the next flush sends at once (before: still parked for an hour).
    @Test func aNewURLIsNotHeldBackByTheOldOnesRetryAfter() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/old": ["script": [["status": 503, "retryAfter": "3600"]]]])
        try configure(collector, ["a": ["url": "COLLECTOR/old", "batchSize": "200"]])
        let ids = try spoolDrive()
        #expect(try flush().status == 75)
        #expect(try flush().status == 75)
        #expect(collector.requests("/old").count == 1)

        try configure(collector, ["a": ["url": "COLLECTOR/new"]])
        let (status, _, stderr) = try flush()
        #expect(status == 0, "\(stderr)")
        #expect(collector.acceptedIDs("/new") == ids)
    }

    /// Retry-After waits add up against one budget (30 s per batch): 29 s three times over
    /// used to keep a flush running 87 s. Real collector and spool; only the waits are counted
    /// instead of slept.
    @Test func retryAfterWaitsShareOneBudget() async throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/a": ["script": [["status": 503, "retryAfter": "29"], ["status": 503, "retryAfter": "29"],
                                                ["status": 503, "retryAfter": "29"]]]])
        _ = try spoolDrive()
        let waits = Waits()
        let flusher = Flusher(spool: try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock()),
                              endpoints: [Endpoint(name: "a", url: collector.url("/a"))],
                              transport: AsyncHTTPTransport(clock: SystemClock(), elapsed: SystemMonotonicClock()),
                              clock: SystemClock(), logger: Logger(label: "test"),
                              sleep: { await waits.add($0) })
        let report = try await flusher.run()
        let waited = await waits.all
        #expect(waited == [29_000], "waited \(waited) ms")
        #expect(collector.requests("/a").count == 2)
        #expect(report.endpoints.first?.pending == 120)
    }

    /// A URL with a port beyond 65535 (spooled by an earlier version for `trigger --post`)
    /// is refused by the transport before NIO traps on it; an unknown host is said plainly.
    @Test func unusableURLsAreRefusedWithoutATrap() async throws {
        let transport = AsyncHTTPTransport(clock: SystemClock(), elapsed: SystemMonotonicClock())
        let request = DeliveryRequest(url: "http://127.0.0.1:99999/in", headers: [], body: Array("{}".utf8), timeoutMilliseconds: 2000)
        #expect(await transport.post(request) == .unusableURL("port 99999 is out of range (1 to 65535)"))
        let fetched = await transport.get("http://127.0.0.1:70000/", headers: [], timeoutMilliseconds: 2000)
        #expect(fetched == .failed("port 70000 is out of range (1 to 65535)"))

        let post = try geolocate.run(["trigger", "login", "--replay", GeolocateProcess.example("kiosk-gnss.nmea"),
                                      "--permission", "fine", "--post", "http://no-such-host.invalid/in"])
        #expect(post.status == 0)
        #expect(post.stderr.contains("unknown host") && !post.stderr.contains("DNS error"), "\(post.stderr)")
    }

    actor Waits {
        var all: [Int64] = []
        func add(_ milliseconds: Int64) { all.append(milliseconds) }
    }

    @Test func aPoisonRecordIsDeadLetteredAndTheRestDelivered() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try configure(collector, ["a": ["url": "COLLECTOR/a", "batchSize": "100"]])
        let ids = try spoolDrive()
        try collector.script(["/a": ["poison": [ids[37]]]])
        let (status, report, stderr) = try flush()
        #expect(status == 0, "\(stderr)")
        #expect(Set(collector.acceptedIDs("/a")) == Set(ids).subtracting([ids[37]]))
        #expect(report["a"]?["deadLettered"] as? Int == 1)
        let reported = try #require((report["a"]?["deadLetters"] as? [[String: Any]])?.first)
        #expect(reported["id"] as? String == ids[37] && reported["status"] as? Int == 400)
        #expect(report["a"]?["sent"] as? Int == 119)
        let letters = try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock()).deadLetters(for: "a")
        #expect(letters.map(\.id) == [ids[37]] && letters.first?.status == 400)
        #expect(try spooledCount() == 0)
        expectDuplicatesShareAKey(collector, "/a")
    }

    /// SQL run on the spool by another program (Python's sqlite3), as a user with a hand tool would.
    func damageSpool(_ sql: String) throws {
        let script = "import sqlite3, sys\nwith sqlite3.connect(sys.argv[1]) as db: db.executescript(sys.argv[2])"
        var python = geolocate
        python.executable = URL(fileURLWithPath: "/usr/bin/python3")
        let result = try python.run(["-c", script, geolocate.stateDirectory + "/spool.sqlite", sql])
        try #require(result.status == 0, "\(result.stderr)")
    }

    /// Records another program damaged (text in a number, a position or time no fix has, a
    /// position removed, no id)
    /// go to the dead letters unsent, naming why; the rest arrive. They used to be sent with
    /// 0 or the absurd value in place. Figures out of range are sent as unknown.
    @Test func damagedRecordsAreDeadLetteredUnsent() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try configure(collector, ["a": ["url": "COLLECTOR/a", "batchSize": "50", "format": "mosaic-ndjson"]])
        let ids = try spoolDrive()
        let damaged = [ids[3], ids[40], ids[41], ids[60], ids[99], ids[119]]
        try damageSpool("""
            UPDATE records SET latitude = 'abc' WHERE id = '\(ids[3])';
            UPDATE records SET latitude = 1e308 WHERE id = '\(ids[40])';
            UPDATE records SET longitude = x'00ff' WHERE id = '\(ids[41])';
            UPDATE records SET latitude = NULL WHERE id = '\(ids[60])';
            UPDATE records SET fixTimestamp = 9223372036854775807 WHERE id = '\(ids[99])';
            UPDATE records SET id = '' WHERE id = '\(ids[119])';
            UPDATE records SET speed = -5, course = 720 WHERE id = '\(ids[7])';
            """)
        let (status, report, stderr) = try flush()
        #expect(status == 0, "\(stderr)")
        #expect(Set(collector.acceptedIDs("/a")) == Set(ids).subtracting(damaged))
        #expect(report["a"]?["sent"] as? Int == 114 && report["a"]?["deadLettered"] as? Int == 6)
        let letters = try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock()).deadLetters(for: "a")
        #expect(letters.count == 6 && letters.allSatisfy { $0.status == nil && $0.reason.hasPrefix("damaged in the spool: ") },
                "\(letters)")
        #expect(letters.contains { $0.reason.contains("latitude is not of its type") })
        #expect(letters.contains { $0.reason.contains("position is out of range") })
        #expect(letters.contains { $0.reason.contains("time is out of range") })
        #expect(letters.contains { $0.reason.contains("no id") })
        // Not sent as 0°: a position its attributes say it has, and the column does not.
        #expect(letters.contains { $0.reason.contains("its latitude is missing") })
        let lines = collector.requests("/a").flatMap { $0.body.split(separator: "\n").map(String.init) }
        let seventh = try #require(lines.first { $0.contains(ids[7]) })
        #expect(!seventh.contains("\"speed\"") || seventh.contains("\"speed\":null"), "\(seventh)")
        #expect(try spooledCount() == 0)
    }

    /// An endpoint cursor another program damaged: text, or past every seq the spool gave, or
    /// a retry time centuries away. The records are sent (twice rather than never), and the
    /// endpoint is parked a day at most.
    @Test func damagedCursorsSendRatherThanHide() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try configure(collector, ["a": ["url": "COLLECTOR/a"], "b": ["url": "COLLECTOR/b"]])
        let ids = try spoolDrive()
        try damageSpool("""
            INSERT INTO endpoints (name, deliveredThrough) VALUES ('a', 'abc');
            INSERT INTO endpoints (name, deliveredThrough, retryAt, retryURL, lastError)
                VALUES ('b', 9223372036854775807, 9223372036854775807, NULL, 'HTTP 503');
            """)
        let first = try flush()
        #expect(Set(collector.acceptedIDs("/a")) == Set(ids), "\(first.stderr)")
        #expect(first.report["b"]?["lastError"] as? String != nil && collector.acceptedIDs("/b").isEmpty)
        // Parked a day at most (epoch ms, as records carry times), and said on stderr.
        let notBefore = try #require((first.report["b"]?["nextRetryAt"] as? NSNumber)?.int64Value)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        #expect(notBefore > now && notBefore <= now + 86_400_000 + 60_000, "parked until \(notBefore)")
        #expect(first.stderr.contains("b: skipped until "), "\(first.stderr)")
        let second = try flush(["--ignore-retry-after"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(Set(collector.acceptedIDs("/b")) == Set(ids))
        #expect(collector.acceptedIDs("/a").count == ids.count, "a sent its records again")
        #expect(try spooledCount() == 0)
    }

    @Test func anEndpointDownForSeveralFlushesBlocksNothingElse() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/down": ["default": ["status": 503]]])
        try configure(collector, ["up": ["url": "COLLECTOR/up"], "down": ["url": "COLLECTOR/down"]])
        let ids = try spoolDrive()
        let first = try flush()
        #expect(first.status == 75)
        #expect(first.report["down"]?["pending"] as? Int == 120)
        #expect((first.report["down"]?["lastError"] as? String)?.contains("503") == true)
        #expect(collector.acceptedIDs("/up") == ids)
        #expect(try spooledCount() == 120)  // "down" has none of them yet
        #expect(try flush().status == 75)

        try collector.script([:])
        var last: Int32 = 75
        #expect(waitUntil(.seconds(30)) {
            last = (try? flush().status) ?? 75
            return last == 0
        })
        #expect(collector.acceptedIDs("/down").suffix(120) == ids[...])
        #expect(try spooledCount() == 0)
        #expect(collector.acceptedIDs("/up") == ids)  // never sent twice to the endpoint that was up
    }

    @Test func aFlushKilledMidBatchLosesNothing() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/a": ["script": [["status": 200], ["status": 200, "delay": 30]]]])
        try configure(collector, ["a": ["url": "COLLECTOR/a", "batchSize": "40", "timeout": "60s"]])
        let ids = try spoolDrive()
        let running = try geolocate.start(["flush"])
        #expect(waitUntil(.seconds(10)) { collector.requests("/a").count >= 2 })
        // The second batch is in flight: received, its 200 not yet sent.
        #expect(collector.requests("/a").map(\.sent) == [true, false])
        #expect(kill(running.pid, SIGKILL) == 0)
        #expect(running.finish(within: .seconds(5))?.signal == SIGKILL)
        #expect(collector.acceptedIDs("/a") == Array(ids.prefix(40)))
        try collector.script([:])
        let (status, _, stderr) = try flush()
        #expect(status == 0, "\(stderr)")
        #expect(Set(collector.acceptedIDs("/a")) == Set(ids))
        expectDuplicatesShareAKey(collector, "/a")
        #expect(try spooledCount() == 0)
    }

    @Test func twoFlushesAtOnceDeliverEachRecordOnce() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try configure(collector, ["a": ["url": "COLLECTOR/a", "batchSize": "10"]])
        let ids = try spoolDrive()
        let flushes = try (0..<2).map { _ in try geolocate.start(["flush"]) }
        for running in flushes {
            let result = try #require(running.finish(within: .seconds(60)))
            #expect(result.status == 0, "\(result.stderr)")
        }
        #expect(collector.acceptedIDs("/a").sorted() == ids.sorted())
    }

    @Test func triggerPostSendsAtOnceOrSpools() throws {
        let collector = try Collector()
        defer { collector.stop() }
        let sent = try geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine",
                                      "--post", collector.url("/now")])
        #expect(sent.status == 0)
        let id = try #require(try sent.json()["id"] as? String)
        #expect(collector.acceptedIDs("/now") == [id])
        #expect(collector.requests("/now").first?.key == id)

        let (closed, held) = try Loopback.refusingPort()
        defer { close(held) }
        let failed = try geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine",
                                        "--post", "http://127.0.0.1:\(closed)/x"])
        #expect(failed.status == 0)
        #expect(failed.stderr.contains("it is in the spool for the next flush"))
        let spooled = try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock()).mosaicLines()
        let failedID = try #require(try failed.json()["id"] as? String)
        #expect(spooled.count == 1 && spooled[0].contains(failedID))

        try configure(collector, ["ndjson": ["url": "COLLECTOR/ndjson", "format": "mosaic-ndjson"]])
        let toEndpoint = try geolocate.run(["trigger", "logout", "--replay", drive, "--permission", "fine", "--endpoint", "ndjson"])
        #expect(toEndpoint.status == 0)
        #expect(collector.requests("/ndjson").first?.contentType == "application/x-ndjson")
        #expect(try geolocate.run(["trigger", "logout", "--replay", drive, "--endpoint", "nowhere"]).status == 78)
    }

    @Test func trackTransmitsOnItsInterval() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try configure(collector, ["a": ["url": "COLLECTOR/a"]])
        let result = try geolocate.run(["track", "--replay", drive, "--replay-speed", "40x", "--every-fix", "--permission", "fine",
                                        "--transmit-interval", "1s"])
        #expect(result.status == 0, "\(result.stderr)")
        // Fixes arrive for about 3 s; each flush inside track sent what was spooled by then,
        // and what came after the last one waits in the spool.
        let delivered = collector.acceptedIDs("/a")
        #expect(!delivered.isEmpty)
        #expect(Set(delivered).count == delivered.count)
        #expect(try spooledCount() == 120 - delivered.count)
    }

    /// A flush inside track runs beside collection; SIGTERM while it waits on a slow endpoint
    /// stops track at once, commits everything, and the batch whose 200 was never sent stays.
    @Test func sigtermDuringATransmissionStopsTrackPromptly() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/a": ["default": ["status": 200, "delay": 30]]])
        try configure(collector, ["a": ["url": "COLLECTOR/a", "timeout": "60s"]])
        let running = try geolocate.start(["track", "--replay", drive, "--replay-speed", "20x", "--every-fix", "--stdout",
                                           "--permission", "fine", "--transmit-interval", "1s"])
        #expect(waitUntil(.seconds(20)) { !collector.requests("/a").isEmpty }, "\(running.stderr)")
        // Collection goes on while the flush waits on the endpoint.
        let atRequest = running.stdoutLines.count
        #expect(waitUntil(.seconds(10)) { running.stdoutLines.count >= atRequest + 10 }, "track stopped collecting during its flush")
        #expect(collector.requests("/a").allSatisfy { !$0.sent })
        #expect(running.isRunning)
        kill(running.pid, SIGTERM)
        let result = try #require(running.finish(within: .seconds(3)), "track waited for its flush after SIGTERM")
        #expect(result.status == 0 && result.signal == nil, "\(result.stderr)")
        let printed = result.stdout.split(separator: "\n").count
        #expect(collector.acceptedIDs("/a").isEmpty)
        #expect(try spooledCount() == printed)
    }

    /// `fields.*` (SPEC §5) limits trigger records as it does track's, on stdout, in the
    /// `--post` body and in the spool; and flush sends under the fields in force when it runs.
    @Test func fieldsLimitTriggerRecordsEverywhereAndFlushUsesTheFieldsInForce() throws {
        let collector = try Collector()
        defer { collector.stop() }
        for field in ["speed", "course"] {
            #expect(try geolocate.run(["config", "set", "fields.\(field)", "false"]).status == 0)
        }
        let posted = try geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine",
                                        "--post", collector.url("/now")])
        #expect(posted.status == 0, "\(posted.stderr)")
        let location = try #require(try posted.json()["location"] as? [String: Any])
        #expect(location["speed"] == nil && location["course"] == nil && location["altitude"] != nil)
        let body = try #require(collector.requests("/now").first?.body)
        #expect(!body.contains("\"speed\"") && !body.contains("\"course\"") && body.contains("\"altitude\""))

        let (closed, held) = try Loopback.refusingPort()
        defer { close(held) }
        let failed = try geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine",
                                        "--post", "http://127.0.0.1:\(closed)/x"])
        #expect(failed.status == 0)
        let spooled = try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock()).records()
        #expect(spooled.count == 1 && spooled[0].fix?.speed == nil && spooled[0].fix?.course == nil)
        #expect(spooled[0].fix?.altitudeHAE != nil)

        // Switched off after spooling: the flushed body leaves it out too.
        try configure(collector, ["a": ["url": "COLLECTOR/a", "format": "mosaic-ndjson"]])
        _ = try spoolDrive()
        #expect(try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock()).records().last?.fix?.altitudeHAE != nil)
        #expect(try geolocate.run(["config", "set", "fields.altitude", "false"]).status == 0)
        #expect(try flush(["--endpoint", "a"]).status == 0)
        let bodies = collector.requests("/a").map(\.body)
        #expect(!bodies.isEmpty && bodies.allSatisfy { !$0.contains("\"altitude\"") && !$0.contains("\"speed\"") && $0.contains("\"accuracy\"") })
    }

    /// A record `trigger --endpoint` could not deliver goes out again from flush under the key
    /// it was first sent with, in every endpoint format: a receiver that took the first attempt
    /// recognises the second.
    @Test(arguments: ["mosaic-ndjson", "openlocate", "mosaic"])
    func aRecordRetriedByFlushKeepsItsIdempotencyKey(_ format: String) throws {
        let collector = try Collector()
        defer { collector.stop() }
        try configure(collector, ["e": ["url": "COLLECTOR/e", "format": format]])
        try collector.script(["/e": ["script": [["status": 500]]]])
        let posted = try geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine",
                                        "--endpoint", "e"])
        #expect(posted.status == 0 && posted.stderr.contains("it is in the spool"), "\(posted.stderr)")
        #expect(try flush(["--ignore-retry-after"]).status == 0)
        let keys = collector.requests("/e").map(\.key)
        #expect(keys.count == 2 && keys[0] != nil && keys[0] == keys[1])
    }

    @Test func flushWithoutEndpointsOrWithADryRun() throws {
        let none = try geolocate.run(["flush"])
        #expect(none.status == 78)
        #expect(none.stderr.contains("geolocate config set endpoints.NAME.url"))
        let collector = try Collector()
        defer { collector.stop() }
        try configure(collector, ["a": ["url": "COLLECTOR/a"]])
        _ = try spoolDrive()
        let dry = try flush(["--dry-run"])
        #expect(dry.status == 0)
        #expect(dry.report["a"]?["pending"] as? Int == 120)
        #expect(collector.requests().isEmpty)
    }

    /// 401 (and 403, 404, 405, 407) says the endpoint or its credentials are wrong: nothing is
    /// dead-lettered, the endpoint is not tried again in the run, flush exits 78 naming it.
    @Test func aWrongTokenKeepsEveryRecord() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/a": ["default": ["status": 401]], "/b": ["default": ["status": 403]]])
        try configure(collector, ["a": ["url": "COLLECTOR/a", "batchSize": "10"], "b": ["url": "COLLECTOR/b"]])
        let ids = try spoolDrive()
        let (status, report, stderr) = try flush()
        #expect(status == 78, "\(stderr)")
        #expect(stderr.contains("endpoint a") && stderr.contains("401"), "\(stderr)")
        #expect(collector.requests("/a").count == 1 && collector.requests("/b").count == 1)
        #expect(report["a"]?["pending"] as? Int == 120 && report["a"]?["deadLettered"] as? Int == 0)
        #expect(try spooledCount() == 120)
        #expect(try geolocate.run(["flush", "--dead-letters"]).stdout.isEmpty)

        try collector.script([:])
        #expect(try flush().status == 0)
        #expect(collector.acceptedIDs("/a") == ids && collector.acceptedIDs("/b") == ids)
        #expect(try spooledCount() == 0)
    }

    /// Dead letters are listed, and put back in the queue for the endpoint that refused them.
    @Test func deadLettersAreListedAndRequeued() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try configure(collector, ["a": ["url": "COLLECTOR/a", "batchSize": "16"], "b": ["url": "COLLECTOR/b"]])
        let ids = try spoolDrive()
        let poison = [ids[7], ids[90]]
        try collector.script(["/a": ["poison": poison]])
        #expect(try flush().status == 0)
        let listed = try geolocate.run(["flush", "--dead-letters"])
        #expect(listed.status == 0)
        let lines = listed.stdout.split(separator: "\n")
        #expect(lines.count == 2 && lines.allSatisfy { $0.hasPrefix("a\t") && $0.contains("\t400\t") }, "\(listed.stdout)")
        #expect(poison.allSatisfy(listed.stdout.contains))
        let json = try JSONSerialization.jsonObject(with: Data(try geolocate.run(["flush", "--dead-letters", "--json"]).stdout.utf8))
        #expect((json as? [[String: Any]])?.compactMap { $0["id"] as? String } == poison)

        let unknown = try geolocate.run(["flush", "--requeue-dead-letters", "no-such-id"])
        #expect(unknown.status == 64 && unknown.stderr.contains("no-such-id"), "\(unknown.stderr)")
        let requeued = try geolocate.run(["flush", "--requeue-dead-letters", poison[0]])
        #expect(requeued.status == 0, "\(requeued.stderr)")
        try collector.script([:])
        #expect(try flush().status == 0)
        // Sent again to the endpoint that refused it, not to the one that had it.
        #expect(collector.acceptedIDs("/a").filter { $0 == poison[0] }.count == 1)
        #expect(collector.acceptedIDs("/b").filter { $0 == poison[0] }.count == 1)
        #expect(try geolocate.run(["flush", "--dead-letters"]).stdout.split(separator: "\n").count == 1)
        #expect(try spooledCount() == 0)
    }

    /// A redirect is not a delivery: the records stay, flush exits 78 naming where it pointed,
    /// and nothing reaches the target as an empty GET.
    @Test func aRedirectKeepsTheRecords() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/a": ["default": ["status": 302, "location": collector.url("/moved")]]])
        try configure(collector, ["a": ["url": "COLLECTOR/a"]])
        _ = try spoolDrive()
        let (status, _, stderr) = try flush()
        #expect(status == 78, "\(stderr)")
        #expect(stderr.contains("302") && stderr.contains("/moved"), "\(stderr)")
        #expect(collector.requests("/moved").isEmpty)
        #expect(try spooledCount() == 120)

        let posted = try geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine",
                                        "--post", collector.url("/a")])
        #expect(posted.status == 0 && posted.stderr.contains("302"), "\(posted.stderr)")
        #expect(collector.requests("/moved").isEmpty)
        #expect(try spooledCount() == 121)
    }

    /// A state directory that cannot be used (a file named by --state-dir) does not stop the
    /// POST of a record already printed: it is sent, without a device id of the install, and
    /// what could not be kept is said. Before, the sender's device id was read from the
    /// state directory first, and nothing was sent (exit 73 with the server up).
    @Test func aPostIsSentWhenTheStateDirectoryCannotBeUsed() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let file = geolocate.home.appendingPathComponent("a-file").path
        try "not a directory\n".write(toFile: file, atomically: true, encoding: .utf8)
        let posted = try geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine",
                                        "--state-dir", file, "--post", collector.url("/hook")])
        #expect(posted.status == 0, "\(posted.stderr)")
        let id = try #require(try posted.json()["id"] as? String)
        #expect(collector.acceptedIDs("/hook") == [id])
        #expect(collector.requests("/hook").count == 1)
        #expect(posted.stderr.contains("\(file): not a directory (check --state-dir or GEOLOCATE_STATE_DIR)"), "\(posted.stderr)")
        #expect(posted.stderr.contains("the record goes without a device id"), "\(posted.stderr)")
        // Refused as well: neither sent nor kept, and both are said (a hostile pass: only the spool was).
        try collector.script(["/hook": ["default": ["status": 500]]])
        let refused = try geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine",
                                         "--state-dir", file, "--post", collector.url("/hook")])
        #expect(refused.status == 73, "\(refused.stderr)")
        #expect(refused.stderr.contains("the record was not delivered to \(collector.url("/hook")): HTTP 500"), "\(refused.stderr)")
    }

    /// A record `trigger --post URL` could not send is spooled with its URL, and the next
    /// flush sends it there, as --post does, even with no endpoint configured.
    @Test func aFailedPostIsDeliveredToItsURLLater() throws {
        let collector = try Collector()
        defer { collector.stop() }
        // Track records for the (not yet configured) endpoints must not go to the URL.
        let tracked = try spoolDrive()
        try collector.script(["/hook": ["default": ["status": 503]]])
        let posted = try geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine",
                                        "--post", collector.url("/hook")])
        #expect(posted.status == 0, "\(posted.stderr)")
        let id = try #require(try posted.json()["id"] as? String)
        #expect(try spooledCount() == tracked.count + 1)

        try collector.script([:])
        let (status, report, stderr) = try flush(["--dry-run"])
        #expect(status == 0 && report[collector.url("/hook")]?["pending"] as? Int == 1, "\(stderr)")
        #expect(try flush().status == 0)
        #expect(collector.acceptedIDs("/hook") == [id])
        let sent = try #require(collector.requests("/hook").last)
        #expect(sent.contentType == "application/json" && sent.key == id)
        #expect(try spooledCount() == tracked.count)
    }

    /// A record `trigger --post` printed is spooled before the POST: killed while the
    /// endpoint takes its time, nothing is lost; delivered, it leaves the spool.
    @Test func aPostKilledInFlightKeepsItsRecord() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/hook": ["default": ["status": 200, "delay": 30]]])
        let running = try geolocate.start(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine",
                                           "--post", collector.url("/hook")])
        #expect(waitUntil(.seconds(20)) { !collector.requests("/hook").isEmpty })
        #expect(kill(running.pid, SIGKILL) == 0)
        let result = try #require(running.finish(within: .seconds(5)))
        #expect(result.signal == SIGKILL)
        let id = try #require(collector.requests("/hook").first?.ids.first)
        #expect(try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock()).mosaicLines().contains { $0.contains(id) })

        try collector.script([:])
        #expect(try flush().status == 0)
        #expect(collector.acceptedIDs("/hook") == [id])
        let delivered = try geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine",
                                           "--post", collector.url("/hook")])
        #expect(delivered.status == 0 && delivered.stderr.isEmpty, "\(delivered.stderr)")
        #expect(try spooledCount() == 0)
    }

    /// The endpoint timeout bounds the whole exchange: a 200 whose body trickles for 30 s
    /// neither holds flush nor trigger --post past it.
    @Test func aTricklingBodyIsCutAtTheTimeout() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/slow": ["default": ["status": 200, "trickle": [60, 0.5]]]])
        try configure(collector, ["a": ["url": "COLLECTOR/slow", "timeout": "2s"]])
        let ids = try spoolDrive()
        let running = try geolocate.start(["flush"])
        let flushed = try #require(running.finish(within: .seconds(15)), "flush waited on a trickling body")
        #expect(flushed.status == 0, "\(flushed.stderr)")
        #expect(collector.acceptedIDs("/slow") == ids)

        let trigger = try geolocate.start(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine",
                                           "--post", collector.url("/slow")])
        let triggered = try #require(trigger.finish(within: .seconds(20)), "trigger --post waited on a trickling body")
        #expect(triggered.status == 0, "\(triggered.stderr)")
    }

    /// Credentials in the URL are sent as Basic auth, never shown; a Retry-After of centuries
    /// parks the endpoint a day at most, and --ignore-retry-after tries it at once.
    @Test func urlCredentialsAndAbsurdRetryAfter() throws {
        let collector = try Collector()
        defer { collector.stop() }
        let url = collector.url("/a").replacingOccurrences(of: "http://", with: "http://alice:S3CRET@") + "?api_key=K3Y"
        _ = try geolocate.run(["config", "set", "endpoints.a.url", url])
        try collector.script(["/a": ["default": ["status": 503, "retryAfter": "9223372036854775"]]])
        let ids = try spoolDrive()
        let result = try geolocate.run(["flush", "--json"])
        #expect(result.status == 75 && result.signal == nil, "\(result.status) \(result.stdout) \(result.stderr)")
        #expect(!(result.stdout + result.stderr).contains("S3CRET") && !(result.stdout + result.stderr).contains("K3Y"))
        #expect(result.stderr.contains("24 h"), "\(result.stderr)")
        let request = try #require(collector.requests("/a").first)
        #expect(request.headers["Authorization"] == "Basic " + Data("alice:S3CRET".utf8).base64EncodedString())

        try collector.script([:])
        #expect(try flush().status == 75)  // parked: not tried
        #expect(collector.requests("/a").count == 1)
        #expect(try flush(["--ignore-retry-after"]).status == 0)
        #expect(collector.acceptedIDs("/a") == ids)
    }
}
