import APNs
import APNsSimulator
import APNsTransport
import Foundation
import HTTP2
import HTTPRouting
import HTTPServer
import HeraldCore
import Synchronization
import Testing

/// The control API: deliveries, tokens, faults and channels, in memory through the responder and
/// mounted on a router, with its effects checked over HTTP/2.
@Suite struct ControlAPITests {
    static let token = SimulatorFixture.token

    static func call(
        _ control: some HTTPResponder,
        _ method: String,
        _ path: String,
        body: String = ""
    ) async throws -> (status: Int, json: APNSJSONValue?) {
        let response = try await control.respond(to: HTTPRequest(method: method, path: path, body: Array(body.utf8)))
        return (response.status, response.body.isEmpty ? nil : try APNSJSONValue(parsing: response.body))
    }

    @Test func deliveriesAreListedFilteredAndCleared() async throws {
        try await withSimulator { fixture in
            let connection = try await fixture.connect()
            let jwt = try fixture.jwt()
            let other = String(repeating: "cd", count: 32)
            _ = try await connection.send(fixture.devicePush(jwt: jwt, headers: [("apns-collapse-id", "c1")]))
            _ = try await connection.send(
                fixture.devicePush(token: other, jwt: jwt, headers: [("apns-expiration", "0")])
            )
            _ = try await connection.send(
                fixture.devicePush(
                    jwt: jwt,
                    headers: [("apns-push-type", "voip"), ("apns-topic", "com.example.app.voip")],
                    payload: #"{"call":42}"#
                )
            )
            _ = try await connection.send(fixture.devicePush(jwt: jwt, payload: "oops"))
            let control = fixture.simulator.control

            let all = try await Self.call(control, "GET", "/deliveries")
            #expect(all.status == 200)
            guard case .array(let deliveries)? = all.json?["deliveries"] else {
                Issue.record("no deliveries array")
                return
            }
            #expect(deliveries.count == 4)
            let newest = deliveries[0]
            #expect(newest["status"] == 400)
            #expect(newest["reason"] == "BadRequestPayload")
            #expect(newest["payload"] == .null)
            #expect(newest["payload_size"] == 4)
            let voip = deliveries[1]
            #expect(voip["push_type"] == "voip")
            #expect(voip["topic"] == "com.example.app.voip")
            #expect(voip["payload"] == ["call": 42])
            #expect(voip["jwt"]?["kid"] == .string(fixture.key.keyID))
            #expect(voip["jwt"]?["iss"] == .string(fixture.key.teamID))
            #expect(voip["jwt"]?["iat"] == .integer(Int64(fixture.clock.now().timeIntervalSince1970)))
            #expect(voip["status"] == 200)
            #expect(voip["reason"] == .null)
            let oldest = deliveries[3]
            #expect(oldest["collapse_id"] == "c1")
            #expect(oldest["priority"] == 10)
            #expect(oldest["expiration"] == .null)
            #expect(oldest["kind"] == "device")
            #expect(oldest["channel_id"] == .null)
            #expect(oldest["apns_id"]?.stringValue.flatMap(UUID.init(uuidString:)) != nil)
            #expect(oldest["received_at"]?.stringValue.flatMap(RFC3339Date.parse) != nil)

            func count(_ query: String) async throws -> Int? {
                guard
                    case .array(let items)? = try await Self.call(control, "GET", "/deliveries?\(query)").json?[
                        "deliveries"
                    ]
                else {
                    return nil
                }
                return items.count
            }
            #expect(try await count("token=\(other)") == 1)
            #expect(try await count("token=\(other.uppercased())") == 1)
            #expect(try await count("topic=com.example.app") == 3)
            #expect(try await count("push_type=voip") == 1)
            #expect(try await count("status=400") == 1)
            #expect(try await count("limit=2") == 2)
            #expect(try await Self.call(control, "GET", "/deliveries?limit=zero").status == 400)

            #expect(try await Self.call(control, "DELETE", "/deliveries").status == 204)
            #expect(try await count("") == 0)
            await connection.close()
        }
    }

    @Test func registeredAndUnregisteredTokens() async throws {
        try await withSimulator(topics: ["com.example.app", "com.example.other"]) { fixture in
            let control = fixture.simulator.control
            let registered = try await Self.call(
                control,
                "POST",
                "/tokens",
                body: #"{"token":"\#(Self.token)","topic":"com.example.other"}"#
            )
            #expect(registered.status == 200)
            #expect(registered.json?["topic"] == "com.example.other")
            let connection = try await fixture.connect()
            let jwt = try fixture.jwt()
            let notForTopic = try await connection.send(fixture.devicePush(jwt: jwt))
            #expect(notForTopic.status == 400)
            #expect(notForTopic.reason == "DeviceTokenNotForTopic")
            let right = try await connection.send(
                fixture.devicePush(jwt: jwt, headers: [("apns-topic", "com.example.other")])
            )
            #expect(right.status == 200)

            let gone = try await Self.call(
                control,
                "POST",
                "/tokens",
                body: #"{"token":"\#(Self.token)","unregistered_at":1760000000123}"#
            )
            #expect(gone.json?["timestamp"] == 1_760_000_000_123)
            let unregistered = try await connection.send(fixture.devicePush(jwt: jwt))
            #expect(unregistered.status == 410)
            #expect(unregistered.reason == "Unregistered")
            #expect(unregistered.timestampMilliseconds == 1_760_000_000_123)

            guard case .array(let tokens)? = try await Self.call(control, "GET", "/tokens").json?["tokens"] else {
                Issue.record("no tokens array")
                return
            }
            #expect(tokens.count == 1)
            #expect(try await Self.call(control, "DELETE", "/tokens?token=\(Self.token)").status == 204)
            #expect(try await Self.call(control, "DELETE", "/tokens?token=\(Self.token)").status == 404)
            #expect(try await connection.send(fixture.devicePush(jwt: jwt)).status == 200)
            let invalid = try await Self.call(control, "POST", "/tokens", body: #"{"token":"xyz"}"#)
            #expect(invalid.status == 400)
            #expect(invalid.json?["error"]?["field"] == "token")
            await connection.close()
        }
    }

    @Test func statusFaultsEveryNthRequestAndForOneToken() async throws {
        try await withSimulator { fixture in
            let control = fixture.simulator.control
            let created = try await Self.call(
                control,
                "POST",
                "/faults",
                body: #"{"type":"status","status":500,"reason":"InternalServerError","every":2}"#
            )
            #expect(created.status == 201)
            #expect(created.json?["id"] == 1)
            let (client, pool) = fixture.makeClient()
            var answers: [Int] = []
            for _ in 0..<4 {
                answers.append(try await client.send(try DevicePushTests.alert()).answer.status)
            }
            #expect(answers == [200, 500, 200, 500])
            #expect(fixture.simulator.deliveries().first?.reason == .internalServerError)
            guard case .array(let faults)? = try await Self.call(control, "GET", "/faults").json?["faults"] else {
                Issue.record("no faults array")
                return
            }
            #expect(faults.first?["matched"] == 4)
            #expect(faults.first?["fired"] == 2)

            #expect(try await Self.call(control, "DELETE", "/faults").status == 204)
            let throttled = String(repeating: "ee", count: 32)
            _ = try await Self.call(
                control,
                "POST",
                "/faults",
                body: #"{"type":"status","status":429,"token":"\#(throttled)","times":1}"#
            )
            #expect(try await client.send(try DevicePushTests.alert()).isDelivered)
            let refused = try await client.send(try DevicePushTests.alert(token: throttled)).answer
            #expect(refused.status == 429)
            #expect(refused.reason == "TooManyRequests")
            #expect(try await client.send(try DevicePushTests.alert(token: throttled)).isDelivered)
            await pool.shutdown()
        }
    }

    @Test func latencyFaultsWaitBeforeAnswering() async throws {
        let gate = SleepGate()
        try await withSimulator(configure: { $0.clock = GatedClock(wall: $0.clock, gate: gate) }) { fixture in
            _ = try await Self.call(
                fixture.simulator.control,
                "POST",
                "/faults",
                body: #"{"type":"latency","latency_ms":250}"#
            )
            let connection = try await fixture.connect()
            let request = fixture.devicePush(jwt: try fixture.jwt())
            let answered = Flag()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    let response = try await connection.send(request)
                    answered.set()
                    #expect(response.status == 200)
                }
                let requested = await gate.nextSleep()
                #expect(requested == .milliseconds(250))
                // The handler is suspended in the fault's sleep: nothing can have been answered.
                #expect(!answered.isSet)
                gate.release()
                try await group.waitForAll()
            }
            #expect(answered.isSet)
            await connection.close()
        }
    }

    @Test func goAwayAfterStreamsCarriesTheReason() async throws {
        try await withSimulator { fixture in
            _ = try await Self.call(
                fixture.simulator.control,
                "POST",
                "/faults",
                body: #"{"type":"goaway","after_streams":2,"reason":"Shutdown"}"#
            )
            let connection = try await fixture.connect()
            let jwt = try fixture.jwt()
            #expect(try await connection.send(fixture.devicePush(jwt: jwt)).status == 200)
            #expect(connection.status.goAway == nil)
            #expect(try await connection.send(fixture.devicePush(jwt: jwt)).status == 200)
            let goAway = try #require(connection.status.goAway)
            #expect(goAway.reason == "Shutdown")
            #expect(goAway.errorCode == .noError)
            #expect(goAway.lastStreamID == 3)
            await #expect(throws: HTTP2Error.self) {
                try await connection.send(fixture.devicePush(jwt: jwt))
            }
            // The project's pool replaces such connections by itself.
            let (client, pool) = fixture.makeClient()
            for _ in 0..<5 { #expect(try await client.send(try DevicePushTests.alert()).isDelivered) }
            await pool.shutdown()
            await connection.close()
        }
    }

    @Test func closeFaultsDropTheConnection() async throws {
        try await withSimulator { fixture in
            fixture.simulator.addFault(APNSSimulatorFault(.closeConnection(afterStreams: 2)))
            let connection = try await fixture.connect()
            let jwt = try fixture.jwt()
            #expect(try await connection.send(fixture.devicePush(jwt: jwt)).status == 200)
            await #expect {
                try await connection.send(fixture.devicePush(jwt: jwt))
            } throws: { error in
                guard let error = error as? HTTP2Error else { return false }
                return error.code == .connectionClosed && error.goAway == nil
            }
            #expect(connection.status.isClosed)
            // The dropped request was not answered, so it is not recorded.
            #expect(fixture.simulator.deliveries().count == 1)
            fixture.simulator.removeAllFaults()
            let fresh = try await fixture.connect()
            #expect(try await fresh.send(fixture.devicePush(jwt: try fixture.jwt())).status == 200)
            await fresh.close()
        }
    }

    @Test func channelsAndTheOverview() async throws {
        try await withSimulator { fixture in
            let (client, pool) = fixture.makeClient()
            let channel = try await client.createChannel(
                bundleID: SimulatorFixture.bundleID,
                storagePolicy: .mostRecentMessageStored
            )
            let broadcast = APNSBroadcastRequest(
                bundleID: SimulatorFixture.bundleID,
                channelID: channel,
                storagePolicy: .mostRecentMessageStored,
                payload: Array(#"{"aps":{"event":"end","timestamp":2,"content-state":{}}}"#.utf8)
            )
            #expect(try await client.send(broadcast).isDelivered)
            await pool.shutdown()
            let control = fixture.simulator.control
            // Channel ids are base64: '+', '/' and '=' must be percent-encoded in a query.
            let encoded = channel.rawValue.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let recorded = try await Self.call(control, "GET", "/deliveries?channel_id=\(encoded)")
            guard case .array(let broadcasts)? = recorded.json?["deliveries"], let sent = broadcasts.first else {
                Issue.record("the broadcast was not listed")
                return
            }
            #expect(broadcasts.count == 1)
            #expect(sent["kind"] == "broadcast")
            #expect(sent["channel_id"] == .string(channel.rawValue))
            #expect(sent["topic"] == "com.example.app")
            #expect(sent["token"] == .null)
            #expect(sent["expiration"] == 0)
            #expect(sent["request_id"]?.stringValue.flatMap(UUID.init(uuidString:)) != nil)
            #expect(sent["payload"]?["aps"]?["event"] == "end")
            guard case .array(let channels)? = try await Self.call(control, "GET", "/channels").json?["channels"] else {
                Issue.record("no channels array")
                return
            }
            #expect(channels.count == 1)
            #expect(channels.first?["channel_id"] == .string(channel.rawValue))
            #expect(channels.first?["bundle_id"] == "com.example.app")
            #expect(channels.first?["message_storage_policy"] == 1)
            #expect(channels.first?["push_type"] == "LiveActivity")

            let overview = try await Self.call(control, "GET", "/")
            #expect(overview.json?["url"] == .string(fixture.simulator.url))
            #expect(overview.json?["ca_file"] == fixture.simulator.caFile.map(APNSJSONValue.string))
            #expect(overview.json?["channels"] == 1)
            #expect(overview.json?["max_concurrent_streams"]?["initial"] == 1)
            #expect(overview.json?["max_concurrent_streams"]?["authenticated"] == 1000)
            #expect(
                overview.json?["keys"] == [
                    ["key_id": .string(fixture.key.keyID), "team_id": .string(fixture.key.teamID)]
                ]
            )

            #expect(try await Self.call(control, "DELETE", "/channels").status == 204)
            #expect(fixture.simulator.channels().isEmpty)
        }
    }

    @Test func theControlAPIMountsUnderAPrefix() async throws {
        try await withSimulator { fixture in
            var router = Router()
            router.get("/healthz") { _ in .text("ok") }
            fixture.simulator.control.register(on: &router, prefix: "/simulator/")
            let connection = try await fixture.connect()
            _ = try await connection.send(fixture.devicePush(jwt: try fixture.jwt()))
            guard
                case .array(let items)? = try await Self.call(router, "GET", "/simulator/deliveries").json?[
                    "deliveries"
                ]
            else {
                Issue.record("no deliveries under /simulator")
                return
            }
            #expect(items.count == 1)
            #expect(try await Self.call(router, "GET", "/simulator").json?["url"] == .string(fixture.simulator.url))
            #expect(try await Self.call(router, "GET", "/simulator/").status == 200)
            #expect(try await Self.call(router, "GET", "/deliveries").status == 404)
            #expect(try await Self.call(router, "POST", "/simulator/faults", body: #"{"type":"nope"}"#).status == 400)
            await connection.close()
        }
    }

    @Test func registriesAnswer409PastTheirBoundsAndDeliveriesDropTheOldest() async throws {
        try await withSimulator(configure: {
            $0.tokenLimit = 2
            $0.faultLimit = 1
            $0.deliveryCapacity = 2
        }) { fixture in
            let control = fixture.simulator.control
            for index in 1...2 {
                let token = String(format: "%064x", index)
                #expect(try await Self.call(control, "POST", "/tokens", body: #"{"token":"\#(token)"}"#).status == 200)
            }
            let full = try await Self.call(
                control,
                "POST",
                "/tokens",
                body: #"{"token":"\#(String(format: "%064x", 3))"}"#
            )
            #expect(full.status == 409)
            #expect(full.json?["error"]?["code"] == "limit_reached")
            // A registered token can still change.
            let update = #"{"token":"\#(String(format: "%064x", 2))","topic":"com.example.app"}"#
            #expect(try await Self.call(control, "POST", "/tokens", body: update).status == 200)
            #expect(try await Self.call(control, "DELETE", "/tokens").status == 204)
            #expect(
                try await Self.call(control, "POST", "/tokens", body: #"{"token":"\#(String(format: "%064x", 3))"}"#)
                    .status == 200
            )

            let fault = #"{"type":"latency","latency_ms":1}"#
            #expect(try await Self.call(control, "POST", "/faults", body: fault).status == 201)
            let tooMany = try await Self.call(control, "POST", "/faults", body: fault)
            #expect(tooMany.status == 409)
            #expect(tooMany.json?["error"]?["code"] == "limit_reached")
            #expect(fixture.simulator.addFault(APNSSimulatorFault(.delay(.milliseconds(1)))) == nil)
            #expect(try await Self.call(control, "DELETE", "/faults").status == 204)

            let connection = try await fixture.connect()
            let jwt = try fixture.jwt()
            for index in 1...3 {
                _ = try await connection.send(fixture.devicePush(token: String(format: "%064x", 100 + index), jwt: jwt))
            }
            let kept = fixture.simulator.deliveries().map(\.token)
            #expect(kept == [String(format: "%064x", 103), String(format: "%064x", 102)])
        }
    }
}

/// A flag set once, read from any task.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)

    var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }

    func set() {
        value.store(true, ordering: .sequentiallyConsistent)
    }
}

enum RFC3339Date {
    static func parse(_ text: String) -> Date? {
        try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text)
    }
}

/// A clock whose sleeps wait at `gate`; the time of day is `wall`'s.
struct GatedClock: HeraldClock {
    let wall: any HeraldClock
    let gate: SleepGate

    func now() -> Date { wall.now() }
    func uptime() -> Duration { wall.uptime() }

    func sleep(until deadline: Date) async throws {
        try await gate.sleep(Duration(timeInterval: max(0, deadline.timeIntervalSince(now()))))
    }

    func sleep(for duration: Duration) async throws {
        try await gate.sleep(duration)
    }
}

/// A sleep for latency faults that records the duration asked for and waits for the test.
final class SleepGate: Sendable {
    private struct State {
        var requests: [Duration] = []
        var sleepers: [CheckedContinuation<Void, Never>] = []
        var watchers: [CheckedContinuation<Duration, Never>] = []
        var released = false
    }

    private let state = Mutex(State())

    var sleep: @Sendable (Duration) async throws -> Void {
        { [self] duration in await wait(duration) }
    }

    private func wait(_ duration: Duration) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (resumeNow, watchers) = state.withLock { state -> (Bool, [CheckedContinuation<Duration, Never>]) in
                state.requests.append(duration)
                let watchers = state.watchers
                state.watchers = []
                if state.released { return (true, watchers) }
                state.sleepers.append(continuation)
                return (false, watchers)
            }
            for watcher in watchers { watcher.resume(returning: duration) }
            if resumeNow { continuation.resume() }
        }
    }

    /// Waits until something sleeps and returns the duration it asked for.
    func nextSleep() async -> Duration {
        await withCheckedContinuation { (continuation: CheckedContinuation<Duration, Never>) in
            let existing = state.withLock { state -> Duration? in
                if let first = state.requests.first { return first }
                state.watchers.append(continuation)
                return nil
            }
            if let existing { continuation.resume(returning: existing) }
        }
    }

    /// Ends every sleep, now and later.
    func release() {
        let sleepers = state.withLock { state in
            state.released = true
            defer { state.sleepers = [] }
            return state.sleepers
        }
        for sleeper in sleepers { sleeper.resume() }
    }
}
