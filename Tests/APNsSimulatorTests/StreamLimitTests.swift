import APNs
import APNsSimulator
import APNsTransport
import AsyncTestSupport
import Foundation
import HTTP2
import Testing

/// APNs' stream behaviour: one stream until a connection's first authenticated success, then
/// many; streams above the limit refused.
@Suite struct StreamLimitTests {
    @Test func oneStreamUntilTheFirstSuccessThenTheConfiguredLimit() async throws {
        try await withSimulator(configure: { $0.maxConcurrentStreams = 250 }) { fixture in
            let connection = try await fixture.connect()
            #expect(connection.status.maxConcurrentStreams == 1)
            let refused = try await connection.send(fixture.devicePush(jwt: nil))
            #expect(refused.reason == "MissingProviderToken")
            #expect(connection.status.maxConcurrentStreams == 1)
            let jwt = try fixture.jwt()
            let invalid = try await connection.send(fixture.devicePush(jwt: jwt, payload: ""))
            #expect(invalid.reason == "PayloadEmpty")
            #expect(connection.status.maxConcurrentStreams == 1)
            let accepted = try await connection.send(fixture.devicePush(jwt: jwt))
            #expect(accepted.status == 200)
            #expect(connection.status.maxConcurrentStreams == 250)
            // Each connection starts over.
            let second = try await fixture.connect()
            #expect(second.status.maxConcurrentStreams == 1)
            await connection.close()
            await second.close()
        }
    }

    @Test(
        "with streamLimitAfterRejection, a refused push lowers the limit until the next success",
        arguments: [nil, 1] as [Int?]
    )
    func rejectionLowersTheLimit(lowered: Int?) async throws {
        try await withSimulator(configure: {
            $0.maxConcurrentStreams = 250
            $0.streamLimitAfterRejection = lowered
        }) { fixture in
            let connection = try await fixture.connect()
            let jwt = try fixture.jwt()
            #expect(try await connection.send(fixture.devicePush(jwt: jwt)).status == 200)
            #expect(connection.status.maxConcurrentStreams == 250)
            let refused = try await connection.send(fixture.devicePush(token: "abcd", jwt: jwt))
            #expect(refused.reason == "BadDeviceToken")
            #expect(connection.status.maxConcurrentStreams == (lowered ?? 250))
            _ = try await connection.send(fixture.devicePush(token: "abcd", jwt: jwt))
            #expect(connection.status.maxConcurrentStreams == (lowered ?? 250))
            #expect(try await connection.send(fixture.devicePush(jwt: jwt)).status == 200)
            #expect(connection.status.maxConcurrentStreams == 250)
            await connection.close()
        }
    }

    @Test("Herald's client keeps sending while refusals drop the limit to 1: each push answered once")
    func clientUnderLoweredLimits() async throws {
        try await withSimulator(configure: { $0.streamLimitAfterRejection = 1 }) { fixture in
            let (client, pool) = fixture.makeClient()
            let refusedToken = String(repeating: "cd", count: 32)
            _ = fixture.simulator.addFault(
                APNSSimulatorFault(.respond(status: 400, reason: .badDeviceToken), token: refusedToken)
            )
            let results = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
                for index in 0..<300 {
                    group.addTask {
                        let token = index % 10 == 9 ? refusedToken : SimulatorFixture.token
                        let request = APNSRequest(
                            deviceToken: token,
                            pushType: .alert,
                            topic: .bundleID(SimulatorFixture.bundleID),
                            payload: Array(#"{"aps":{"alert":"x"}}"#.utf8)
                        )
                        return (index, try await client.send(request).answer.status)
                    }
                }
                return try await group.reduce(into: [Int: Int]()) { $0[$1.0] = $1.1 }
            }
            #expect(results.count == 300)
            #expect(results.filter { $0.value == 200 }.count == 270)
            #expect(results.filter { $0.value == 400 }.allSatisfy { $0.key % 10 == 9 })
            #expect(fixture.simulator.deliveries(.init(status: 200)).count == 270)
            await pool.shutdown()
        }
    }

    @Test func aStreamAboveTheLimitIsRefused() async throws {
        try await withSimulator { fixture in
            let raw = try await RawFrameConnection.connect(port: try #require(fixture.simulator.cleartextPort))
            let path = "/3/device/\(SimulatorFixture.token)"
            let fields = [(":method", "POST"), (":scheme", "http"), (":authority", "127.0.0.1"), (":path", path)]
            // Stream 1 stays open (no END_STREAM: its body is still to come); stream 3 is one too many.
            raw.write(
                RawFrameConnection.preface
                    + RawFrameConnection.frame(type: 0x4, flags: 0, streamID: 0, payload: [])
                    + RawFrameConnection.headers(streamID: 1, endStream: false, fields)
                    + RawFrameConnection.headers(streamID: 3, endStream: true, fields)
            )
            let (limit, reset) = try await withDeadline("the server's RST_STREAM on stream 3", timeout: .seconds(30)) {
                var limit: UInt32?
                for await frame in raw.frames {
                    if frame.type == 0x4, frame.flags & 0x1 == 0 {
                        limit = frame.settings.first { $0.0 == 0x3 }?.1 ?? limit
                    }
                    if frame.type == 0x3 { return (limit, Optional(frame)) }
                }
                return (limit, nil)
            }
            #expect(limit == 1)
            #expect(reset?.streamID == 3)
            #expect(reset?.errorCode == 0x7)  // REFUSED_STREAM
            raw.close()
        }
    }
}
