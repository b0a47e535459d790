import APNs
import Foundation
import HeraldCore
import HeraldCrypto
import Testing

@testable import APNsSimulator

/// The store's parts: the delivery ring buffer, faults, tokens, channels, and the control API's
/// and command line's input parsing.
@Suite struct StateTests {
    static func delivery(_ number: Int, token: String? = nil) -> APNSSimulatorDelivery {
        APNSSimulatorDelivery(
            id: UUID(),
            receivedAt: Date(timeIntervalSince1970: Double(number)),
            kind: .device,
            connectionID: 1,
            token: token,
            topic: "t\(number % 2)",
            pushType: "alert",
            priority: 10,
            expiration: nil,
            collapseID: nil,
            apnsID: nil,
            requestID: nil,
            channelID: nil,
            status: 200,
            reason: nil,
            timestamp: nil,
            payload: [],
            providerToken: nil
        )
    }

    @Test func deliveryLogKeepsTheNewestUpToItsCapacity() {
        var log = DeliveryLog(capacity: 3)
        #expect(log.newestFirst(matching: .init()).isEmpty)
        for number in 1...2 { log.append(Self.delivery(number)) }
        #expect(log.newestFirst(matching: .init()).map(\.receivedAt.timeIntervalSince1970) == [2, 1])
        for number in 3...7 { log.append(Self.delivery(number)) }
        #expect(log.count == 3)
        #expect(log.total == 7)
        #expect(log.newestFirst(matching: .init()).map(\.receivedAt.timeIntervalSince1970) == [7, 6, 5])
        #expect(log.newestFirst(matching: .init(limit: 2)).map(\.receivedAt.timeIntervalSince1970) == [7, 6])
        #expect(log.newestFirst(matching: .init(topic: "t1")).map(\.receivedAt.timeIntervalSince1970) == [7, 5])
        log.removeAll()
        #expect(log.count == 0)
        log.append(Self.delivery(8))
        #expect(log.newestFirst(matching: .init()).map(\.receivedAt.timeIntervalSince1970) == [8])
    }

    @Test func faultsFireEveryNthMatchingRequestAndExpire() {
        var plan = FaultPlan()
        let now = Date()
        _ = plan.add(APNSSimulatorFault(.respond(status: 500, reason: .internalServerError), every: 3, times: 2))
        var fired: [Int] = []
        for number in 1...12 where plan.response(kind: .device, token: nil, now: now) != nil { fired.append(number) }
        #expect(fired == [3, 6])
        #expect(plan.isEmpty)
    }

    @Test func tokenFaultsApplyToTheirTokenOnly() {
        var plan = FaultPlan()
        let token = String(repeating: "cd", count: 32)
        _ = plan.add(APNSSimulatorFault(.respond(status: 429, reason: .tooManyRequests), token: token.uppercased()))
        #expect(plan.response(kind: .device, token: String(repeating: "ab", count: 32), now: Date()) == nil)
        #expect(plan.response(kind: .device, token: token, now: Date())?.reason == .tooManyRequests)
        #expect(plan.response(kind: .broadcast, token: nil, now: Date()) == nil)
    }

    @Test func delaysAndConnectionFaults() {
        var plan = FaultPlan()
        _ = plan.add(APNSSimulatorFault(.delay(.milliseconds(200)), every: 2))
        _ = plan.add(APNSSimulatorFault(.delay(.milliseconds(50)), appliesTo: [.channels]))
        _ = plan.add(APNSSimulatorFault(.goAway(afterStreams: 2, reason: .shutdown)))
        _ = plan.add(APNSSimulatorFault(.closeConnection(afterStreams: 3)))
        #expect(plan.delay(kind: .device, token: nil) == .zero)
        #expect(plan.delay(kind: .device, token: nil) == .milliseconds(200))
        #expect(plan.delay(kind: .channels, token: nil) == .milliseconds(50))
        // Delays do not count towards respond faults and the other way round.
        #expect(plan.response(kind: .device, token: nil, now: Date()) == nil)
        #expect(plan.connectionEffects(streamNumber: 1) == FaultEffects())
        #expect(plan.connectionEffects(streamNumber: 2).goAway?.reason == .shutdown)
        #expect(plan.connectionEffects(streamNumber: 3).close)
        #expect(plan.connectionEffects(streamNumber: 4) == FaultEffects())
    }

    @Test func a410FaultCarriesTheTimestamp() {
        var plan = FaultPlan()
        _ = plan.add(APNSSimulatorFault(.respond(status: 410, reason: .unregistered)))
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(plan.response(kind: .device, token: nil, now: now)?.timestamp == now)
    }

    @Test func channelRegistryLimitsAndNeverReusesIDs() throws {
        var registry = ChannelRegistry(limit: 2)
        let first = try registry.create(bundleID: "a", policy: .noMessageStored, now: Date()).get()
        let second = try registry.create(bundleID: "a", policy: .mostRecentMessageStored, now: Date()).get()
        #expect(first.channelID != second.channelID)
        #expect(Data(base64Encoded: first.channelID)?.count == 16)
        if case .failure(let rejection) = registry.create(bundleID: "a", policy: .noMessageStored, now: Date()) {
            #expect(rejection.reason == .cannotCreateChannelConfig)
        } else {
            Issue.record("a third channel was created over the limit of 2")
        }
        // Another app has its own limit.
        #expect((try? registry.create(bundleID: "b", policy: .noMessageStored, now: Date()).get()) != nil)
        #expect(registry.ids(bundleID: "a") == [first.channelID, second.channelID])
        #expect(registry.delete(bundleID: "b", id: first.channelID) == nil)
        #expect(registry.delete(bundleID: "a", id: first.channelID) != nil)
        #expect(registry.ids(bundleID: "a") == [second.channelID])
        #expect((try? registry.create(bundleID: "a", policy: .noMessageStored, now: Date()).get()) != nil)
    }

    @Test func tokenRegistry() {
        var registry = DeviceTokenRegistry()
        let token = String(repeating: "ef", count: 32)
        func push(_ topic: String, bundle: String) -> DevicePush {
            DevicePush(token: token, topic: topic, bundleID: bundle, pushType: .alert, priority: .immediately)
        }
        #expect(registry.check(push("com.a", bundle: "com.a")) == nil)
        registry.set(APNSSimulatorTokenState(token: token.uppercased(), topic: "com.a"))
        #expect(registry.check(push("com.a", bundle: "com.a")) == nil)
        #expect(registry.check(push("com.a.voip", bundle: "com.a")) == nil)
        #expect(registry.check(push("com.b", bundle: "com.b"))?.reason == .deviceTokenNotForTopic)
        let since = Date(timeIntervalSince1970: 1_750_000_000.5)
        registry.set(APNSSimulatorTokenState(token: token, unregisteredAt: since))
        let gone = registry.check(push("com.b", bundle: "com.b"))
        #expect(gone?.status == 410)
        #expect(gone?.timestamp == since)
    }

    @Test func generatedIdentifiersAreLowercaseUUIDsAndUnique() {
        var seen = Set<String>()
        for _ in 0..<2000 {
            let text = SimulatorCore.makeID()
            #expect(text.utf8.count == 36)
            #expect(text == text.lowercased())
            #expect(UUID(uuidString: text) != nil)
            #expect(Array(text)[14] == "4")
            #expect("89ab".contains(Array(text)[19]))
            seen.insert(text)
        }
        #expect(seen.count == 2000)
    }

    // MARK: Control input

    @Test func tokenBodies() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let token = String(repeating: "ab", count: 32)
        func parse(_ json: String) -> Result<APNSSimulatorTokenState, ControlInputError> {
            ControlInput.tokenState(Array(json.utf8), now: now)
        }
        #expect(try parse(#"{"token":"\#(token)","topic":"com.a"}"#).get().topic == "com.a")
        #expect(try parse(#"{"token":"\#(token)","unregistered_at":"now"}"#).get().unregisteredAt == now)
        #expect(
            try parse(#"{"token":"\#(token)","unregistered_at":1700000000}"#).get().unregisteredAt
                == Date(timeIntervalSince1970: 1_700_000_000)
        )
        #expect(
            try parse(#"{"token":"\#(token)","unregistered_at":1700000000123}"#).get().unregisteredAt
                == Date(timeIntervalSince1970: 1_700_000_000.123)
        )
        #expect(
            try parse(#"{"token":"\#(token)","unregistered_at":"2023-11-14T22:13:20Z"}"#).get().unregisteredAt
                == Date(timeIntervalSince1970: 1_700_000_000)
        )
        for (json, field) in [
            (#"{"token":"abc"}"#, "token"),
            (#"{"topic":"com.a"}"#, "token"),
            (#"{"token":"\#(token)","topic":"a b"}"#, "topic"),
            (#"{"token":"\#(token)","unregistered_at":"yesterday"}"#, "unregistered_at"),
            (#"{"token":"\#(token)","colour":"red"}"#, "colour"),
        ] {
            guard case .failure(let error) = parse(json) else {
                Issue.record("\(json) was accepted")
                continue
            }
            #expect(error.field == field, "\(json)")
        }
        if case .failure(let error) = parse("[]") {
            #expect(error.field == nil)
        } else {
            Issue.record("[] was accepted")
        }
    }

    @Test func faultBodies() throws {
        func parse(_ json: String) -> Result<APNSSimulatorFault, ControlInputError> {
            ControlInput.fault(Array(json.utf8))
        }
        let status = try parse(#"{"type":"status","status":500,"every":3,"times":2,"applies_to":["channels"]}"#).get()
        #expect(status.action == .respond(status: 500, reason: .internalServerError))
        #expect(status.every == 3)
        #expect(status.times == 2)
        #expect(status.appliesTo == [.channels])
        #expect(
            try parse(#"{"type":"status","status":418,"reason":"Teapot"}"#).get().action
                == .respond(status: 418, reason: APNSErrorReason(rawValue: "Teapot"))
        )
        #expect(try parse(#"{"type":"latency","latency_ms":250}"#).get().action == .delay(.milliseconds(250)))
        #expect(
            try parse(#"{"type":"goaway","after_streams":4}"#).get().action
                == .goAway(afterStreams: 4, reason: .shutdown)
        )
        #expect(try parse(#"{"type":"close"}"#).get().action == .closeConnection(afterStreams: 1))
        for (json, field) in [
            (#"{"type":"status","status":418}"#, "reason"),
            (#"{"type":"status"}"#, "status"),
            (#"{"type":"status","status":200}"#, "status"),
            (#"{"type":"latency"}"#, "latency_ms"),
            (#"{"type":"explode"}"#, "type"),
            (#"{"type":"close","every":2}"#, "every"),
            (#"{"type":"status","status":500,"token":"xyz"}"#, "token"),
            (#"{"type":"status","status":500,"applies_to":["everything"]}"#, "applies_to"),
        ] {
            guard case .failure(let error) = parse(json) else {
                Issue.record("\(json) was accepted")
                continue
            }
            #expect(error.field == field, "\(json)")
        }
    }

    // MARK: Command line

    @Test func commandLineDefaultsGenerateAKey() throws {
        let options = try APNSSimulatorCommandLine.options(APNSSimulatorCommandLine.spec.parse([]))
        #expect(options.configuration.port == 8443)
        #expect(options.configuration.controlPort == 8444)
        #expect(options.configuration.host == "127.0.0.1")
        let key = try #require(options.generatedKey)
        #expect(options.configuration.keys.map(\.keyID) == [key.keyID])
        #expect(options.configuration.keys.first?.publicKey == key.privateKey.publicKey)
        #expect(options.configuration.teamID == key.teamID)
        #expect(APNSSigningKey.isAppleID(key.keyID) && APNSSigningKey.isAppleID(key.teamID))
    }

    @Test func commandLineKeysTopicsAndPorts() throws {
        let privateKey = P256PrivateKey()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "herald-sim-cli-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let publicFile = directory.appendingPathComponent("public.pem").path
        let privateFile = directory.appendingPathComponent("AuthKey.p8").path
        try privateKey.publicKey.pemRepresentation.write(toFile: publicFile, atomically: true, encoding: .utf8)
        try privateKey.pemRepresentation.write(toFile: privateFile, atomically: true, encoding: .utf8)
        let parsed = try APNSSimulatorCommandLine.spec.parse([
            "--host", "0.0.0.0", "--port", "0", "--control-port", "9000", "--cleartext-port", "9001",
            "--key", "KEYAAAAAA1:\(publicFile)", "--key", "KEYBBBBBB2@sandbox:\(privateFile)", "--team", "TEAMAAAAA1",
            "--topic", "com.a", "--topic", "com.b", "--max-concurrent-streams", "500", "--environment", "production",
            "--streams-after-rejection", "1", "--idle-timeout", "1.5",
        ])
        let options = try APNSSimulatorCommandLine.options(parsed)
        #expect(options.generatedKey == nil)
        let configuration = options.configuration
        #expect(configuration.host == "0.0.0.0")
        #expect(configuration.port == 0)
        #expect(configuration.controlPort == 9000)
        #expect(configuration.cleartextPort == 9001)
        #expect(configuration.keys.map(\.keyID) == ["KEYAAAAAA1", "KEYBBBBBB2"])
        #expect(configuration.keys.allSatisfy { $0.publicKey == privateKey.publicKey })
        #expect(configuration.keys.map(\.environment) == [nil, .sandbox])
        #expect(configuration.environment == .production)
        #expect(configuration.teamID == "TEAMAAAAA1")
        #expect(configuration.topics == ["com.a", "com.b"])
        #expect(configuration.maxConcurrentStreams == 500)
        #expect(configuration.streamLimitAfterRejection == 1)
        #expect(configuration.idleTimeout == .milliseconds(1500))
        let inline = try APNSSimulatorKey.parse("KEYCCCCCC3:\(privateKey.publicKey.pemRepresentation)")
        #expect(inline.publicKey == privateKey.publicKey)
    }

    @Test func commandLineMistakes() throws {
        for arguments in [
            ["--port", "70000"], ["--tls-cert", "/nonexistent"], ["--key", "NOCOLON"],
            ["--key", "K:/nonexistent/file"],
            ["--topic", "not a bundle"], ["extra"], ["--max-concurrent-streams", "0"], ["--team", "lower"],
            ["--environment", "staging"], ["--streams-after-rejection", "0"], ["--idle-timeout", "0"],
            ["--key", "K@staging:/nonexistent/file"],
        ] {
            #expect(throws: UsageError.self, "\(arguments)") {
                try APNSSimulatorCommandLine.options(APNSSimulatorCommandLine.spec.parse(arguments))
            }
        }
    }

    @Test func registriesAreBounded() throws {
        var tokens = DeviceTokenRegistry(limit: 2)
        var stored: [Bool] = []
        for byte in ["01", "02", "03"] {
            stored.append(tokens.set(APNSSimulatorTokenState(token: String(repeating: byte, count: 32))))
        }
        #expect(stored == [true, true, false])
        // Updating a registered token is not a new entry.
        let updated = tokens.set(APNSSimulatorTokenState(token: String(repeating: "02", count: 32), topic: "com.a"))
        #expect(updated)
        #expect(tokens.tokens.count == 2)

        var faults = FaultPlan(limit: 1)
        let first = faults.add(APNSSimulatorFault(.delay(.milliseconds(1))))
        let second = faults.add(APNSSimulatorFault(.delay(.milliseconds(1))))
        faults.removeAll()
        let afterClearing = faults.add(APNSSimulatorFault(.delay(.milliseconds(1))))
        #expect(first != nil && second == nil && afterClearing != nil)

        // Across apps: a client naming ever new bundle IDs cannot grow the registry past it.
        var channels = ChannelRegistry(limit: 10, totalLimit: 2)
        let channel = try channels.create(bundleID: "a", policy: .noMessageStored, now: Date()).get()
        _ = try channels.create(bundleID: "b", policy: .noMessageStored, now: Date()).get()
        guard case .failure(let rejection) = channels.create(bundleID: "c", policy: .noMessageStored, now: Date())
        else {
            Issue.record("a channel was created past the total limit")
            return
        }
        #expect(rejection.reason == .cannotCreateChannelConfig)
        let deleted = channels.delete(bundleID: "a", id: channel.channelID)
        #expect(deleted != nil)
        let replacement = try? channels.create(bundleID: "c", policy: .noMessageStored, now: Date()).get()
        #expect(replacement != nil)
        #expect(channels.count == 2)
    }

    @Test func commandLineBounds() throws {
        let defaults = try APNSSimulatorCommandLine.options(APNSSimulatorCommandLine.spec.parse([])).configuration
        #expect(defaults.deliveryCapacity >= 10_000)
        #expect(defaults.tokenLimit == 100_000)
        #expect(defaults.faultLimit == 1_000)
        #expect(defaults.totalChannelLimit == 100_000)
        let parsed = try APNSSimulatorCommandLine.spec.parse([
            "--max-deliveries", "50000", "--max-tokens", "7", "--max-faults", "3", "--max-channels", "9",
        ])
        let configuration = try APNSSimulatorCommandLine.options(parsed).configuration
        #expect(configuration.deliveryCapacity == 50_000)
        #expect(configuration.tokenLimit == 7)
        #expect(configuration.faultLimit == 3)
        #expect(configuration.totalChannelLimit == 9)
        for arguments in [["--max-tokens", "0"], ["--max-faults", "many"], ["--max-deliveries", "-5"]] {
            #expect(throws: UsageError.self, "\(arguments)") {
                try APNSSimulatorCommandLine.options(APNSSimulatorCommandLine.spec.parse(arguments))
            }
        }
    }
}
