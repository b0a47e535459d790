import APNs
import APNsSimulator
import APNsTransport
import Foundation
import HTTP2
import HeraldCore
import Testing

/// Clients that are not ours — `curl --http2` and `h2load` — get the same answers as the project's
/// client and raw HTTP/2 requests, rule family by rule family.
@Suite struct ExternalClientTests {
    static let token = SimulatorFixture.token

    /// What curl got: status, reason and response headers.
    struct CurlAnswer {
        var status: Int
        var reason: String?
        var timestamp: Int64?
        var headers: [String: String]
        var httpVersion: String
    }

    static func curl(
        _ fixture: SimulatorFixture,
        method: String = "POST",
        path: String,
        headers: [(String, String)],
        body: String?
    ) async throws -> CurlAnswer {
        let curl = try ExternalProcess.locate("curl", package: "curl")
        let headerFile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "herald-sim-\(UUID().uuidString).h"
        ).path
        defer { try? FileManager.default.removeItem(atPath: headerFile) }
        var arguments = [
            "--silent", "--show-error", "--http2", "--cacert", fixture.simulator.caFile ?? "", "--request", method,
            "--dump-header", headerFile, "--write-out", "\n%{http_code} %{http_version}",
        ]
        for (name, value) in headers { arguments += ["--header", "\(name): \(value)"] }
        if let body { arguments += ["--data-binary", body] }
        arguments.append(fixture.simulator.url + path)
        let output = try await ExternalProcess.run(curl, arguments)
        guard output.status == 0 else { throw TestFailure("curl failed (\(output.status)): \(output.stderr)") }
        var lines = output.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        let last = lines.removeLast().split(separator: " ")
        let bodyText = lines.joined(separator: "\n")
        let parsed = APNSErrorBody(parsing: Array(bodyText.utf8))
        var responseHeaders: [String: String] = [:]
        for line in ((try? String(contentsOfFile: headerFile, encoding: .utf8)) ?? "").split(separator: "\r\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            responseHeaders[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces
            )
        }
        return CurlAnswer(
            status: Int(last.first ?? "") ?? 0,
            reason: parsed.reason?.rawValue,
            timestamp: parsed.timestamp.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) },
            headers: responseHeaders,
            httpVersion: last.count > 1 ? String(last[1]) : ""
        )
    }

    @Test func curlGetsTheSameAnswersAsOurClients() async throws {
        try await withSimulator(topics: ["com.example.app", "com.example.other"]) { fixture in
            let jwt = try fixture.jwt()
            let (client, pool) = fixture.makeClient()
            let connection = try await fixture.connect()
            let alert = #"{"aps":{"alert":"Hello"}}"#
            func deviceHeaders(_ extra: [(String, String)] = [], auth: Bool = true) -> [(String, String)] {
                (auth ? [("authorization", "bearer \(jwt)")] : [])
                    + [("apns-topic", SimulatorFixture.bundleID), ("apns-push-type", "alert"), ("apns-priority", "10")]
                    + extra
            }

            // Success: our client and curl.
            let ours = try await client.send(try DevicePushTests.alert()).answer
            let theirs = try await Self.curl(
                fixture,
                path: "/3/device/\(Self.token)",
                headers: deviceHeaders(),
                body: alert
            )
            #expect(theirs.httpVersion == "2")
            #expect(theirs.status == ours.status)
            #expect(theirs.reason == ours.reason)
            #expect(theirs.headers["apns-id"].flatMap(UUID.init(uuidString:)) != nil)
            #expect(theirs.headers["apns-unique-id"] != nil)

            // Topic and app: our client and curl.
            let otherApp = try await client.send(try DevicePushTests.alert(topic: "com.example.nope")).answer
            let otherAppCurl = try await Self.curl(
                fixture,
                path: "/3/device/\(Self.token)",
                headers: deviceHeaders().filter { $0.0 != "apns-topic" } + [("apns-topic", "com.example.nope")],
                body: alert
            )
            #expect(otherAppCurl.status == otherApp.status)
            #expect(otherAppCurl.reason == otherApp.reason)
            #expect(otherAppCurl.reason == "TopicDisallowed")

            // What our client will not send: raw HTTP/2 and curl.
            let rawCases: [(String, String, String, [(String, String)], String?)] = [
                ("bad device token", "POST", "/3/device/1234", deviceHeaders(), alert),
                ("no provider token", "POST", "/3/device/\(Self.token)", deviceHeaders(auth: false), alert),
                ("method", "GET", "/3/device/\(Self.token)", deviceHeaders(), nil),
                ("path", "POST", "/3/devices", deviceHeaders(), alert),
                (
                    "priority", "POST", "/3/device/\(Self.token)",
                    deviceHeaders().filter { $0.0 != "apns-priority" } + [("apns-priority", "3")], alert
                ),
                ("apns-id", "POST", "/3/device/\(Self.token)", deviceHeaders([("apns-id", "nope")]), alert),
                (
                    "payload size", "POST", "/3/device/\(Self.token)", deviceHeaders(),
                    #"{"x":""# + String(repeating: "y", count: 4200) + #""}"#
                ),
                ("payload JSON", "POST", "/3/device/\(Self.token)", deviceHeaders(), "not json"),
                (
                    "duplicate header", "POST", "/3/device/\(Self.token)",
                    deviceHeaders([("apns-collapse-id", "a"), ("apns-collapse-id", "a")]), alert
                ),
            ]
            for (name, method, path, headers, body) in rawCases {
                var fields = HTTP2Headers()
                for (field, value) in headers { fields.add(name: field, value: value) }
                let raw = try await connection.send(
                    HTTP2Request(method: method, path: path, headers: fields, body: Array((body ?? "").utf8))
                )
                let answer = try await Self.curl(fixture, method: method, path: path, headers: headers, body: body)
                #expect(answer.status == raw.status, "\(name)")
                #expect(answer.reason == raw.reason, "\(name)")
                #expect(answer.reason != nil, "\(name)")
            }

            // 410 with its timestamp.
            let gone = String(repeating: "9a", count: 32)
            fixture.simulator.setToken(
                APNSSimulatorTokenState(token: gone, unregisteredAt: Date(timeIntervalSince1970: 1_750_000_000.5))
            )
            let goneOurs = try #require(try await client.send(try DevicePushTests.alert(token: gone)).rejection)
            let goneCurl = try await Self.curl(
                fixture,
                path: "/3/device/\(gone)",
                headers: deviceHeaders(),
                body: alert
            )
            #expect(goneCurl.status == 410)
            #expect(goneCurl.status == goneOurs.status)
            #expect(goneCurl.reason == goneOurs.reason.rawValue)
            #expect(goneCurl.timestamp == 1_750_000_000_500)
            #expect(goneOurs.response.timestamp == Date(timeIntervalSince1970: 1_750_000_000.5))

            // Channels and broadcasts.
            let created = try await Self.curl(
                fixture,
                path: "/1/apps/\(SimulatorFixture.bundleID)/channels",
                headers: [("authorization", "bearer \(jwt)")],
                body: #"{"message-storage-policy":0,"push-type":"LiveActivity"}"#
            )
            #expect(created.status == 201)
            let channel = try #require(created.headers["apns-channel-id"])
            let listed = try await client.allChannels(bundleID: SimulatorFixture.bundleID)
            #expect(listed.map(\.rawValue) == [channel])
            let broadcastHeaders: [(String, String)] = [
                ("authorization", "bearer \(jwt)"), ("apns-push-type", "liveactivity"), ("apns-priority", "10"),
                ("apns-expiration", "0"),
            ]
            let update = #"{"aps":{"event":"update","timestamp":1,"content-state":{}}}"#
            let sent = try await Self.curl(
                fixture,
                path: "/4/broadcasts/apps/\(SimulatorFixture.bundleID)",
                headers: broadcastHeaders + [("apns-channel-id", channel)],
                body: update
            )
            #expect(sent.status == 200)
            #expect(sent.headers["apns-request-id"] != nil)
            let unknown = APNSChannelID(rawValue: "dW5rbm93bi1jaGFubmVs")
            let missingOurs = try await client.send(
                APNSBroadcastRequest(
                    bundleID: SimulatorFixture.bundleID,
                    channelID: unknown,
                    storagePolicy: .noMessageStored,
                    payload: Array(update.utf8)
                )
            ).answer
            let missingCurl = try await Self.curl(
                fixture,
                path: "/4/broadcasts/apps/\(SimulatorFixture.bundleID)",
                headers: broadcastHeaders + [("apns-channel-id", unknown.rawValue)],
                body: update
            )
            #expect(missingCurl.status == missingOurs.status)
            #expect(missingCurl.reason == missingOurs.reason)
            #expect(missingCurl.reason == "ChannelNotRegistered")
            await pool.shutdown()
            await connection.close()
        }
    }

    /// `h2load` results: requests done and status classes.
    struct LoadResult {
        var succeeded: Int
        var failed: Int
        var status2xx: Int
        var status4xx: Int
    }

    static func h2load(
        _ url: String,
        requests: Int,
        headers: [(String, String)],
        body: String
    ) async throws -> LoadResult {
        let h2load = try ExternalProcess.locate("h2load", package: "nghttp2-client")
        let bodyFile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "herald-sim-\(UUID().uuidString).json"
        )
        try Data(body.utf8).write(to: bodyFile)
        defer { try? FileManager.default.removeItem(at: bodyFile) }
        var arguments = ["-n", String(requests), "-c", "1", "-m", "1", "-d", bodyFile.path]
        for (name, value) in headers { arguments += ["-H", "\(name): \(value)"] }
        arguments.append(url)
        let output = try await ExternalProcess.run(h2load, arguments)
        guard output.status == 0 else {
            throw TestFailure("h2load failed (\(output.status)): \(output.stderr)\(output.stdout)")
        }
        func number(before word: String, in line: Substring) -> Int {
            let parts = line.split(whereSeparator: { $0 == " " || $0 == "," })
            guard let index = parts.firstIndex(where: { $0 == word }), index > 0 else { return -1 }
            return Int(parts[index - 1]) ?? -1
        }
        let lines = output.stdout.split(separator: "\n")
        guard let requestsLine = lines.first(where: { $0.hasPrefix("requests:") }),
            let statusLine = lines.first(where: { $0.hasPrefix("status codes:") })
        else { throw TestFailure("unexpected h2load output: \(output.stdout)") }
        return LoadResult(
            succeeded: number(before: "succeeded", in: requestsLine),
            failed: number(before: "failed", in: requestsLine),
            status2xx: number(before: "2xx", in: statusLine),
            status4xx: number(before: "4xx", in: statusLine)
        )
    }

    @Test func h2loadGetsTheSameAnswersAsOurClients() async throws {
        try await withSimulator { fixture in
            let jwt = try fixture.jwt()
            let headers: [(String, String)] = [
                ("authorization", "bearer \(jwt)"), ("apns-topic", SimulatorFixture.bundleID),
                ("apns-push-type", "alert"),
            ]
            let alert = #"{"aps":{"alert":"Load"}}"#
            let connection = try await fixture.connect()
            for (label, url) in [("TLS", fixture.simulator.url), ("h2c", fixture.simulator.cleartextURL!)] {
                // Success.
                fixture.simulator.removeAllDeliveries()
                let good = try await Self.h2load(
                    url + "/3/device/\(Self.token)",
                    requests: 5,
                    headers: headers,
                    body: alert
                )
                #expect(good.succeeded == 5, "\(label)")
                #expect(good.status2xx == 5, "\(label)")
                #expect(fixture.simulator.deliveries().map(\.status) == Array(repeating: 200, count: 5), "\(label)")

                // A rejection family per run; the reasons recorded match what our raw request gets.
                for (path, extra, body) in [
                    ("/3/device/abc", [(String, String)](), alert),
                    ("/3/device/\(Self.token)", [("apns-priority", "2")], alert),
                    ("/3/device/\(Self.token)", [], #"{"aps":"#),
                ] {
                    fixture.simulator.removeAllDeliveries()
                    let result = try await Self.h2load(url + path, requests: 3, headers: headers + extra, body: body)
                    #expect(result.status4xx == 3, "\(label) \(path)")
                    var fields = HTTP2Headers()
                    for (name, value) in headers + extra { fields.add(name: name, value: value) }
                    let ours = try await connection.send(
                        HTTP2Request(path: path, headers: fields, body: Array(body.utf8))
                    )
                    let recorded = fixture.simulator.deliveries()
                    #expect(recorded.count == 4, "\(label) \(path)")
                    #expect(Set(recorded.map { $0.reason?.rawValue }) == [ours.reason], "\(label) \(path)")
                    #expect(Set(recorded.map(\.status)) == [ours.status], "\(label) \(path)")
                }
            }
            await connection.close()
        }
    }

    @Test func theControlPortServesHTTP1() async throws {
        try await withSimulator(configure: { $0.controlPort = 0 }) { fixture in
            let curl = try ExternalProcess.locate("curl", package: "curl")
            let base = try #require(try await fixture.simulator.controlURL())
            let token = String(repeating: "5e", count: 32)
            let posted = try await ExternalProcess.run(
                curl,
                [
                    "--silent", "--show-error", "--fail", "--header", "Content-Type: application/json", "--data",
                    #"{"token":"\#(token)","unregistered_at":"2025-06-01T00:00:00Z"}"#, base + "/tokens",
                ]
            )
            #expect(posted.status == 0, "\(posted.stderr)")
            #expect(try APNSJSONValue(parsing: Array(posted.stdout.utf8))["timestamp"] == 1_748_736_000_000)
            let connection = try await fixture.connect()
            let response = try await connection.send(fixture.devicePush(token: token, jwt: try fixture.jwt()))
            #expect(response.status == 410)
            #expect(response.timestampMilliseconds == 1_748_736_000_000)
            let listed = try await ExternalProcess.run(curl, ["--silent", "--fail", base + "/deliveries?status=410"])
            let json = try APNSJSONValue(parsing: Array(listed.stdout.utf8))
            guard case .array(let deliveries)? = json["deliveries"] else {
                Issue.record("no deliveries: \(listed.stdout)")
                return
            }
            #expect(deliveries.count == 1)
            #expect(deliveries.first?["token"] == .string(token))
            #expect(deliveries.first?["reason"] == "Unregistered")
            await connection.close()
        }
    }
}
