import APNs
import APNsSimulator
import CloudKit
import Foundation
import HTTPRouting
import HeraldCore
import HeraldCrypto
import Testing

/// The simulator's CloudKit side: subscriptions firing silent pushes, and every input limit
/// answered with a 4xx.
@Suite struct CloudKitSimulatorTests {
    static let container = CloudKitFixture.container

    @Test func aSubscriptionFiresASilentPushToEachTokenOnCreation() async throws {
        try await withCloudKitSimulator { fixture in
            let subscription = try await fixture.control(
                "POST",
                "/cloudkit/subscriptions",
                body:
                    #"{"container":"\#(Self.container)","record_type":"WakePing","tokens":["\#(CloudKitFixture.token1)","\#(CloudKitFixture.token2)"],"topic":"com.example.app","id":"wake-sub"}"#
            )
            #expect(subscription.status == 201)
            #expect(subscription.json?["id"] == "wake-sub")
            let client = try fixture.client()
            _ = try await client.createRecord(
                container: Self.container,
                environment: .development,
                recordType: "Other",
                fields: [:]
            )
            #expect(fixture.simulator.deliveries().isEmpty)
            let record = try await client.createRecord(
                container: Self.container,
                environment: .production,
                recordType: "WakePing",
                fields: ["ts": .int64(1)]
            )
            let deliveries = fixture.simulator.deliveries()
            #expect(Set(deliveries.compactMap(\.token)) == [CloudKitFixture.token1, CloudKitFixture.token2])
            for delivery in deliveries {
                #expect(delivery.isDelivered)
                #expect(delivery.pushType == "background")
                #expect(delivery.priority == 5)
                #expect(delivery.topic == "com.example.app")
                let payload = try #require(delivery.payloadJSON)
                #expect(payload["aps"] == ["content-available": 1])
                #expect(payload["ck"]?["qry"]?["rid"] == .string(record.recordName))
                #expect(payload["ck"]?["qry"]?["sid"] == "wake-sub")
            }
            let listed = try await fixture.control("GET", "/deliveries?push_type=background")
            guard case .array(let items)? = listed.json?["deliveries"] else {
                Issue.record("no deliveries array")
                return
            }
            #expect(items.count == 2)
            #expect(try await fixture.control("DELETE", "/cloudkit/subscriptions?id=wake-sub").status == 204)
            #expect(try await fixture.control("DELETE", "/cloudkit/subscriptions?id=wake-sub").status == 404)
            _ = try await client.createRecord(
                container: Self.container,
                environment: .production,
                recordType: "WakePing",
                fields: [:]
            )
            #expect(fixture.simulator.deliveries().count == 2)
            await client.close()
        }
    }

    @Test func aSubscriptionForOneEnvironmentIgnoresTheOther() async throws {
        try await withCloudKitSimulator { fixture in
            _ = try await fixture.control(
                "POST",
                "/cloudkit/subscriptions",
                body:
                    #"{"container":"\#(Self.container)","environment":"production","record_type":"WakePing","tokens":["\#(CloudKitFixture.token1)"],"topic":"com.example.app"}"#
            )
            let client = try fixture.client()
            _ = try await client.createRecord(
                container: Self.container,
                environment: .development,
                recordType: "WakePing",
                fields: [:]
            )
            #expect(fixture.simulator.deliveries().isEmpty)
            _ = try await client.createRecord(
                container: Self.container,
                environment: .production,
                recordType: "WakePing",
                fields: [:]
            )
            #expect(fixture.simulator.deliveries().count == 1)
            await client.close()
        }
    }

    @Test func theRecordsAreListedAndClearedOnTheControlAPI() async throws {
        try await withCloudKitSimulator { fixture in
            let client = try fixture.client()
            _ = try await client.createRecord(
                container: Self.container,
                environment: .development,
                recordType: "WakePing",
                fields: ["ts": .int64(9)]
            )
            let listed = try await fixture.control("GET", "/cloudkit/records?record_type=WakePing")
            guard case .array(let records)? = listed.json?["records"] else {
                Issue.record("no records array")
                return
            }
            #expect(records.count == 1)
            #expect(try await fixture.control("DELETE", "/cloudkit/records").status == 204)
            let page = try await client.queryRecords(
                container: Self.container,
                environment: .development,
                recordType: "WakePing"
            )
            #expect(page.records.isEmpty)
            await client.close()
        }
    }

    @Test func theRecordLimitIsAnswered413QuotaExceeded() async throws {
        try await withCloudKitSimulator(configure: { $0.cloudKitRecordLimit = 2 }) { fixture in
            let client = try fixture.client()
            for _ in 0..<2 {
                _ = try await client.createRecord(
                    container: Self.container,
                    environment: .development,
                    recordType: "WakePing",
                    fields: [:]
                )
            }
            let error = await cloudKitError {
                try await client.createRecord(
                    container: Self.container,
                    environment: .development,
                    recordType: "WakePing",
                    fields: [:]
                )
            }
            #expect(error?.status == 413)
            #expect(error?.code == .quotaExceeded)
            await client.close()
        }
    }

    /// Each request-level limit of records/modify and records/query is a 4xx in CloudKit's shape.
    @Test func everyRequestLimitIsA4xx() async throws {
        try await withCloudKitSimulator { fixture in
            let modify = CloudKitFixture.path("modify")
            let query = CloudKitFixture.path("query")
            let deletes = (0..<201).map { #"{"operationType":"forceDelete","record":{"recordName":"r\#($0)"}}"# }
            let filters = (0..<21).map { _ in #"{"fieldName":"ts","comparator":"EQUALS","fieldValue":{"value":1}}"# }
            let sorts = (0..<6).map { _ in #"{"fieldName":"ts"}"# }
            let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
            let cases: [(String, String, Int)] = [
                (modify, #"{"operations":[\#(deletes.joined(separator: ","))]}"#, 400),
                (modify, #"{"operations":[]}"#, 400),
                (modify, #"{"operations":[{"operationType":"create","record":{"recordType":"T"}}],"extra":1}"#, 400),
                (
                    modify,
                    #"{"operations":[{"operationType":"create","record":{"recordType":"T"}}],"zoneID":{"zoneName":"z"}}"#,
                    404
                ),
                (modify, #"{"operations":\#(deep)}"#, 400),
                (modify, "not json", 400),
                (query, #"{"query":{"recordType":"T"},"resultsLimit":201}"#, 400),
                (query, #"{"query":{"recordType":"T"},"resultsLimit":0}"#, 400),
                (query, #"{"query":{"recordType":"T","filterBy":[\#(filters.joined(separator: ","))]}}"#, 400),
                (query, #"{"query":{"recordType":"T","sortBy":[\#(sorts.joined(separator: ","))]}}"#, 400),
                (query, #"{"query":{"recordType":"T"},"continuationMarker":"bm90LW91cnM="}"#, 400),
                (query, #"{"query":{}}"#, 400),
                (
                    "/database/1/\(Self.container)/development/private/records/query", #"{"query":{"recordType":"T"}}"#,
                    403
                ),
                ("/database/1/\(Self.container)/staging/public/records/query", #"{"query":{"recordType":"T"}}"#, 400),
                ("/database/1/notacontainer/development/public/records/query", #"{"query":{"recordType":"T"}}"#, 400),
                ("/database/1/\(Self.container)/development/public/records/lookup", "{}", 404),
            ]
            for (path, body, status) in cases {
                let answer = try await fixture.raw(path, body: body)
                #expect(answer.status == status, "\(path) \(body.prefix(80))")
                #expect(answer.json?["serverErrorCode"]?.stringValue != nil, "\(path) \(body.prefix(80))")
            }
            // Per-record limits arrive as CloudKit does: a BAD_REQUEST entry for that record.
            let longType = String(repeating: "T", count: 256)
            let perRecord = try await fixture.raw(
                modify,
                body: #"{"operations":[{"operationType":"create","record":{"recordType":"\#(longType)"}}]}"#
            )
            #expect(perRecord.status == 200)
            guard case .array(let entries)? = perRecord.json?["records"] else {
                Issue.record("no records array")
                return
            }
            #expect(entries.first?["serverErrorCode"] == "BAD_REQUEST")
        }
    }

    @Test func authenticationFailuresHaveCloudKitsShape() async throws {
        try await withCloudKitSimulator { fixture in
            let path = CloudKitFixture.path("query")
            let answer = try await fixture.raw(
                path,
                body: #"{"query":{"recordType":"T"}}"#,
                date: Date().addingTimeInterval(-400)
            )
            #expect(answer.status == 401)
            #expect(answer.json?["serverErrorCode"] == "AUTHENTICATION_FAILED")
            #expect(answer.json?["uuid"]?.stringValue != nil)
            #expect(answer.json?["reason"]?.stringValue != nil)
        }
    }

    @Test func everyControlLimitIsA4xx() async throws {
        try await withCloudKitSimulator { fixture in
            let tooManyTokens = (0..<1_001).map { _ in "\"\(CloudKitFixture.token1)\"" }.joined(separator: ",")
            let bodies: [(String, String)] = [
                (
                    "/cloudkit/subscriptions",
                    #"{"container":"\#(Self.container)","record_type":"T","tokens":[\#(tooManyTokens)],"topic":"com.example.app"}"#
                ),
                (
                    "/cloudkit/subscriptions",
                    #"{"container":"\#(Self.container)","record_type":"T","tokens":[],"topic":"com.example.app"}"#
                ),
                (
                    "/cloudkit/subscriptions",
                    #"{"container":"\#(Self.container)","record_type":"T","tokens":["xyz"],"topic":"com.example.app"}"#
                ),
                (
                    "/cloudkit/subscriptions",
                    #"{"container":"nope","record_type":"T","tokens":["\#(CloudKitFixture.token1)"],"topic":"com.example.app"}"#
                ),
                (
                    "/cloudkit/subscriptions",
                    #"{"container":"\#(Self.container)","record_type":"T","tokens":["\#(CloudKitFixture.token1)"],"topic":"com.example.app","extra":1}"#
                ),
                ("/cloudkit/faults", #"{"server_error_code":"THROTTLED","retry_after":3601}"#),
                ("/cloudkit/faults", #"{"server_error_code":"throttled"}"#),
                ("/cloudkit/faults", #"{"server_error_code":"THROTTLED","status":200}"#),
            ]
            for (path, body) in bodies {
                let answer = try await fixture.control("POST", path, body: body)
                #expect(answer.status == 400, "\(path) \(body.prefix(120))")
            }
            for _ in 0..<100 {
                #expect(
                    try await fixture.control(
                        "POST",
                        "/cloudkit/faults",
                        body: #"{"server_error_code":"THROTTLED","operation":"query"}"#
                    ).status == 201
                )
            }
            #expect(
                try await fixture.control("POST", "/cloudkit/faults", body: #"{"server_error_code":"THROTTLED"}"#)
                    .status == 409
            )
            let subscription =
                #"{"container":"\#(Self.container)","record_type":"T","tokens":["\#(CloudKitFixture.token1)"],"topic":"com.example.app"}"#
            for _ in 0..<1_000 {
                _ = try await fixture.control("POST", "/cloudkit/subscriptions", body: subscription)
            }
            #expect(try await fixture.control("POST", "/cloudkit/subscriptions", body: subscription).status == 409)
        }
    }

    @Test func withoutACloudKitKeyTheControlRoutesSayHowToEnableIt() async throws {
        let local = try APNSSimulator.inProcess(topics: ["com.example.app"])
        let response = try await local.control.respond(to: .init(method: "GET", path: "/cloudkit/subscriptions"))
        #expect(response.status == 404)
        #expect(String(decoding: response.body, as: UTF8.self).contains("--cloudkit-key"))
    }

    @Test func theCommandLineReadsCloudKitKeys() throws {
        let key = P256PrivateKeyPEM.make()
        let parsed = try APNSSimulatorCommandLine.spec.parse([
            "--cloudkit-key", "ck1:\(key.publicPEM)", "--cloudkit-key", "ck2:\(key.privatePEM)",
        ])
        let options = try APNSSimulatorCommandLine.options(parsed)
        #expect(options.configuration.cloudKitKeys.map(\.keyID) == ["ck1", "ck2"])
        #expect(options.configuration.cloudKitKeys[0].publicKey == options.configuration.cloudKitKeys[1].publicKey)
        let bad = try APNSSimulatorCommandLine.spec.parse(["--cloudkit-key", "ck1"])
        #expect(throws: UsageError.self) { try APNSSimulatorCommandLine.options(bad) }

        // A private key given as a file is what a client signs with: the exports name it.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ck-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let privateFile = directory.appendingPathComponent("eckey.pem").path
        let publicFile = directory.appendingPathComponent("public.pem").path
        try Data(key.privatePEM.utf8).write(to: URL(fileURLWithPath: privateFile))
        try Data(key.publicPEM.utf8).write(to: URL(fileURLWithPath: publicFile))
        #expect(try APNSSimulatorCloudKitKey.parse("ck:\(privateFile)").privateKeyFile == privateFile)
        #expect(try APNSSimulatorCloudKitKey.parse("ck:\(publicFile)").privateKeyFile == nil)
        #expect(try APNSSimulatorCloudKitKey.parse("ck:\(key.privatePEM)").privateKeyFile == nil, "text, not a file")
    }
}
