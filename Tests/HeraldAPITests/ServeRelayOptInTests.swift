import AsyncTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue 33, item 7, against a real `herald serve --simulator`: the relay is mounted only with
/// HERALD_RELAY=1, its pushes count in a budget of their own (HERALD_RELAY_MAX_IN_FLIGHT) that
/// leaves `/v1`'s sends their room, and HERALD_RELAY_IP_RATE_LIMIT bounds one address.
@Suite("herald serve: the relay, opt-in and kept apart")
struct ServeRelayOptInTests {
    static let key = "serve-relay-key-0123456789"

    static func relay(_ url: String) async throws -> (status: Int, body: String, retryAfter: String?) {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = "POST"
        request.setValue("aes128gcm", forHTTPHeaderField: "Content-Encoding")
        request.httpBody = Data([1, 2, 3])
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as? HTTPURLResponse
        return (
            http?.statusCode ?? 0, String(decoding: data, as: UTF8.self),
            http?.value(forHTTPHeaderField: "Retry-After")
        )
    }

    static func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-relay-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test func withoutHeraldRelayServeDoesNotMountThePushRoute() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let herald = try HeraldProcess(
            arguments: ["serve", "--simulator", "--host", "127.0.0.1", "--port", "0"],
            environment: [
                "DATABASE_URL": "sqlite:\(directory.path)/herald.sqlite", "TOPIC": "org.example.norelay",
                "HERALD_API_KEYS": Self.key,
            ]
        )
        let base = "http://127.0.0.1:\(try await herald.listeningPort())"
        let answer = try await Self.relay("\(base)/push/\(String(repeating: "ab", count: 32))/1")
        #expect(answer.status == 404, "\(answer.body)")
        #expect(!herald.log.contains("relay_topic"))
        herald.signal(SIGTERM)
        #expect(try await herald.waitForExit(timeout: .seconds(10)) == 0, "log:\n\(herald.log)")
    }

    @Test func badLimitsAndARelayWithoutCredentialsStopTheStartSayingWhatToWrite() async throws {
        let bad = try HeraldProcess(
            arguments: ["serve"],
            environment: [
                "HERALD_RELAY": "yes", "HERALD_RELAY_MAX_IN_FLIGHT": "0", "HERALD_RELAY_IP_RATE_LIMIT": "fast",
                "HERALD_CLIENT_RATE_LIMIT": "10/d,5", "HERALD_CLIENT_IP_RATE_LIMIT": "50/s,0",
                // Checked by their features (`checkSettings`), named with the rest.
                "HERALD_WAKE_MIN_INTERVAL": "often", "HERALD_MAX_INSTANCES_PER_USER": "0",
            ]
        )
        #expect(try await bad.waitForExit(timeout: .seconds(10)) == 2)
        for name in [
            "HERALD_RELAY=yes", "HERALD_RELAY_MAX_IN_FLIGHT=0", "HERALD_RELAY_IP_RATE_LIMIT=fast",
            "HERALD_CLIENT_RATE_LIMIT=10/d,5", "HERALD_CLIENT_IP_RATE_LIMIT=50/s,0",
            "HERALD_WAKE_MIN_INTERVAL=often", "HERALD_MAX_INSTANCES_PER_USER=0",
        ] {
            #expect(bad.log.contains(name + " is not valid"), "\(name): \(bad.log)")
        }
        #expect(bad.log.contains("N/s,B"))
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let uncredentialed = try HeraldProcess(
            arguments: ["serve"],
            environment: ["HERALD_RELAY": "1", "DATABASE_URL": "sqlite:\(directory.path)/herald.sqlite"]
        )
        #expect(try await uncredentialed.waitForExit(timeout: .seconds(10)) == 2)
        #expect(uncredentialed.log.contains("HERALD_RELAY=1 needs APNs credentials"), "\(uncredentialed.log)")
    }

    @Test func relayTrafficBeyondItsBudgetIsRefusedAndLeavesV1ItsRoomAndOneAddressIsBounded() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let herald = try HeraldProcess(
            arguments: ["serve", "--simulator", "--host", "127.0.0.1", "--port", "0"],
            environment: [
                "DATABASE_URL": "sqlite:\(directory.path)/herald.sqlite", "TOPIC": "org.example.relay",
                "HERALD_API_KEYS": Self.key, "HERALD_RELAY": "1", "HERALD_RELAY_MAX_IN_FLIGHT": "2",
                "HERALD_RELAY_IP_RATE_LIMIT": "1/h,4",
            ]
        )
        let base = "http://127.0.0.1:\(try await herald.listeningPort())"
        let held = String(repeating: "ab", count: 32)
        // A first answered push: APNs (and the simulator) allow one stream per connection until a
        // push succeeded, then many. Without it the held pushes would hold the only stream.
        let warm = try await fetch(
            "\(base)/v1/notifications?wait=true",
            method: "POST",
            headers: ["Authorization": "Bearer \(Self.key)", "Content-Type": "application/json"],
            body: #"{"tokens":["\#(String(repeating: "ef", count: 32))"],"payload":{"aps":{"alert":"Hi"}}}"#
        )
        #expect(warm.body.contains(#""sent":1"#), "\(warm.body)")
        // The simulator holds every push to `held` for a minute: relayed pushes stay in flight.
        let fault = try await fetch(
            "\(base)/simulator/faults",
            method: "POST",
            headers: ["Authorization": "Bearer \(Self.key)", "Content-Type": "application/json"],
            body: #"{"type":"latency","latency_ms":60000,"token":"\#(held)"}"#
        )
        #expect(fault.status == 201, "\(fault.body)")
        #expect(try await Self.relay("\(base)/push/\(held)/1").status == 202)
        #expect(try await Self.relay("\(base)/push/\(held)/2").status == 202)
        let metrics = try await fetch("\(base)/metrics").body
        #expect(metrics.contains("herald_relay_in_flight 2"), "\(metrics)")

        // The relay's budget is full: its documented overload answer, at once.
        let over = try await Self.relay("\(base)/push/\(held)/3")
        #expect(over.status == 503, "\(over.body)")
        #expect(over.body.contains(#""code":"apns_unavailable""#))
        #expect(over.retryAfter == "10")

        // /v1 is not held back: a notification is admitted and delivered while the relay is full.
        let other = String(repeating: "cd", count: 32)
        let sent = try await fetch(
            "\(base)/v1/notifications?wait=true",
            method: "POST",
            headers: ["Authorization": "Bearer \(Self.key)", "Content-Type": "application/json"],
            body: #"{"tokens":["\#(other)"],"payload":{"aps":{"alert":"Hi"}}}"#
        )
        #expect(sent.status == 200, "\(sent.body)")
        #expect(sent.body.contains(#""status":"done""#) && sent.body.contains(#""sent":1"#), "\(sent.body)")

        // Four relay requests from this address within the hour: the fifth is refused on its
        // headers, whatever it holds.
        #expect(try await Self.relay("\(base)/push/abc/4").status == 400)
        let limited = try await Self.relay("\(base)/push/abc/5")
        #expect(limited.status == 429, "\(limited.body)")
        #expect(limited.body.contains(#""code":"rate_limited""#))
        // An hour a token, less the seconds since the bucket's first request.
        #expect((3_500...3_600).contains(Int(limited.retryAfter ?? "") ?? 0), "\(limited.retryAfter ?? "none")")
        // The limit is the relay's: /v1 answers on.
        #expect(try await fetch("\(base)/v1/devices", headers: ["Authorization": "Bearer \(Self.key)"]).status == 200)
        #expect(try await fetch("\(base)/metrics").body.contains("herald_relay_rate_limited_total 1"))
        // The held pushes never finish: the shutdown's grace period ends the drain.
        herald.signal(SIGTERM)
        _ = try await herald.waitForExit(timeout: .seconds(30))
    }
}
