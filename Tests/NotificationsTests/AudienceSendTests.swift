import APNs
import APNsSimulator
import Audiences
import DatabaseTestSupport
import Devices
import Foundation
import HeraldCore
import Jobs
import JobsTestSupport
import Storage
import Testing

@testable import Notifications

/// Audiences resolved when the send runs: read from the registry a page at a time, every device
/// sent once through the real client to the simulator, resumed from the stored cursor after a
/// failure.
@Suite("Audiences: resolved at send time, in pages, resumable")
struct AudienceSendTests {
    static func create(_ harness: NotificationHarness, audience: [String: Any]) async throws -> StoredNotification {
        let body: [String: Any] = ["audience": audience, "payload": ["aps": ["alert": "Hello"]]]
        let request = try NotificationRequest.parse(
            Array(try JSONSerialization.data(withJSONObject: body)),
            now: harness.clock.now()
        )
        return try await harness.service.create(request)
    }

    static func delivered(_ simulator: APNSSimulator) -> [String: Int] {
        NotificationDurabilityTests.deliveriesPerToken(simulator)
    }

    @Test(
        "every kind of audience reaches exactly its active devices, each once, across pages",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func everyKind(_ backend: Backend) async throws {
        let registry = FakeRegistry()
        let tokens = NotificationHarness.tokens(25)
        for (index, token) in tokens.enumerated() {
            var tags: Set<String> = index.isMultiple(of: 2) ? ["even"] : ["odd"]
            if index.isMultiple(of: 3) { tags.insert("three") }
            registry.register(token, user: "user\(index % 5)", tags: tags, active: index != 24)
        }
        try await NotificationHarness.with(backend, resolver: registry, pageSize: 4) { harness in
            func selected(_ include: (Int) -> Bool) -> Set<String> {
                Set((0..<24).filter(include).map { tokens[$0] })
            }
            let cases: [([String: Any], Set<String>)] = [
                (["all": true], selected { _ in true }),
                (["users": ["user1", "user3", "nobody"]], selected { $0 % 5 == 1 || $0 % 5 == 3 }),
                (["tags": ["any": ["odd", "three"]]], selected { $0 % 2 == 1 || $0 % 3 == 0 }),
                (["tags": ["all": ["even", "three"]]], selected { $0 % 6 == 0 }),
            ]
            var ids: [UUID] = []
            for (audience, _) in cases {
                let created = try await Self.create(harness, audience: audience)
                #expect(created.tokenCount == 0, "nothing is resolved before the send")
                #expect(created.audienceResolvedAt == nil)
                ids.append(created.id)
            }
            #expect(try await harness.worker.runDueJobs() == cases.count)
            var expectedTotal: [String: Int] = [:]
            for ((audience, expected), id) in zip(cases, ids) {
                let notification = try #require(try await harness.store.notification(id: id))
                #expect(notification.status == .done, "\(audience)")
                #expect(notification.tokenCount == expected.count, "\(audience)")
                #expect(notification.audienceResolvedAt != nil)
                let results = try await harness.results(id)
                #expect(Set(results.map(\.token)) == expected, "\(audience)")
                #expect(results.allSatisfy { $0.status == .sent })
                #expect(results.map(\.ordinal) == Array(0..<expected.count))
                for token in expected { expectedTotal[token, default: 0] += 1 }
                let state = try #require(try await harness.store.audienceState(id: id))
                #expect(state.cursor == nil, "the cursor is cleared after the last page")
                #expect(state.resolvedAt != nil)
            }
            #expect(Self.delivered(harness.simulator) == expectedTotal, "each device once per notification")
            #expect(Self.delivered(harness.simulator)[tokens[24]] == nil, "an invalid device is left out")
        }
    }

    @Test(
        "devices registered after the POST and before the send are included",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func resolvedWhenTheSendRuns(_ backend: Backend) async throws {
        let registry = FakeRegistry()
        let tokens = NotificationHarness.tokens(3)
        registry.register(tokens[0], user: "ann")
        try await NotificationHarness.with(backend, resolver: registry) { harness in
            let later = harness.clock.now().addingTimeInterval(600)
            let body: [String: Any] = [
                "audience": ["users": ["ann"]], "payload": ["aps": ["alert": "Hi"]],
                "send_at": RFC3339.string(from: later),
            ]
            let request = try NotificationRequest.parse(
                Array(try JSONSerialization.data(withJSONObject: body)),
                now: harness.clock.now()
            )
            let created = try await harness.service.create(request)
            registry.register(tokens[1], user: "ann")
            registry.register(tokens[2], user: "bob")
            harness.clock.advance(601)
            #expect(try await harness.worker.runDueJobs() == 1)
            #expect(Set(Self.delivered(harness.simulator).keys) == [tokens[0], tokens[1]])
            #expect(try await harness.store.notification(id: created.id)?.tokenCount == 2)
        }
    }

    @Test(
        "a users audience without an active device finishes done with nothing resolved",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func nobodyToSendTo(_ backend: Backend) async throws {
        let registry = FakeRegistry()
        registry.register(NotificationHarness.tokens(1)[0], user: "ann", active: false)
        try await NotificationHarness.with(backend, resolver: registry) { harness in
            let created = try await Self.create(harness, audience: ["users": ["ann", "bob"]])
            #expect(try await harness.worker.runDueJobs() == 1)
            let notification = try #require(try await harness.store.notification(id: created.id))
            #expect(notification.status == .done)
            #expect(notification.tokenCount == 0)
            #expect(notification.audienceResolvedAt != nil)
            #expect(try await harness.store.counts(id: created.id).total == 0)
            #expect(harness.simulator.deliveries().isEmpty)
        }
    }

    @Test(
        "a send that fails mid-audience resumes from the stored cursor and sends no device twice",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func resumesFromTheCursor(_ backend: Backend) async throws {
        let registry = FakeRegistry()
        let tokens = NotificationHarness.tokens(10)
        for token in tokens { registry.register(token, tags: ["news"]) }
        // The third page's read fails, as a database gone away mid-send would.
        registry.failRead(3)
        try await NotificationHarness.with(backend, resolver: registry, pageSize: 3) { harness in
            let created = try await Self.create(harness, audience: ["tags": ["any": ["news"]]])
            #expect(try await harness.worker.runDueJobs() == 1)
            let midway = try #require(try await harness.store.notification(id: created.id))
            #expect(midway.tokenCount == 6, "two pages were stored and sent before the failure")
            #expect(midway.audienceResolvedAt == nil)
            let state = try #require(try await harness.store.audienceState(id: created.id))
            #expect(state.cursor == tokens[5])
            #expect(try await harness.store.counts(id: created.id)[.sent] == 6)
            let job = try await harness.job(of: midway)
            #expect(job.status == .pending, "the job is retried: \(job.status)")

            harness.clock.advance(61)
            #expect(try await harness.worker.runDueJobs() == 1)
            #expect(registry.cursors == [nil, tokens[2], tokens[5], tokens[5], tokens[8]])
            let perToken = Self.delivered(harness.simulator)
            #expect(Set(perToken.keys) == Set(tokens))
            #expect(perToken.values.allSatisfy { $0 == 1 }, "a device was sent twice: \(perToken.values.sorted())")
            let done = try #require(try await harness.store.notification(id: created.id))
            #expect(done.status == .done)
            #expect(done.tokenCount == 10)
        }
    }

    @Test(
        "rows stored before a crash are sent by the next attempt before the registry is read on",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func storedRowsSentFirst(_ backend: Backend) async throws {
        let registry = FakeRegistry()
        let tokens = NotificationHarness.tokens(5)
        for token in tokens { registry.register(token) }
        try await NotificationHarness.with(backend, resolver: registry, pageSize: 2) { harness in
            let created = try await Self.create(harness, audience: ["all": true])
            // A pass that died right after storing its first page: the rows are there, unsent.
            let now = harness.clock.now()
            let claimed = try await harness.store.claimSend(
                created.id,
                owner: "dead",
                until: now.addingTimeInterval(1),
                at: now
            )
            #expect(claimed != nil)
            let page = try await registry.activeTokens(
                of: .all,
                app: created.app,
                environment: created.environment,
                after: nil,
                limit: 2
            )
            let stored = try await harness.store.appendResolved(
                page.tokens,
                to: created.id,
                cursor: page.next,
                ownership: .init(owner: "dead", until: now.addingTimeInterval(1)),
                at: now
            )
            #expect(stored?.count == 2)
            #expect(try await harness.store.counts(id: created.id)[.pending] == 2)

            harness.clock.advance(2)
            let summary = try await harness.sender.send(created.id, isLastAttempt: false, owner: "next")
            #expect(summary.status == .done)
            #expect(Self.delivered(harness.simulator) == Dictionary(uniqueKeysWithValues: tokens.map { ($0, 1) }))
            #expect(try await harness.results(created.id).map(\.token) == tokens)
        }
    }

    @Test(
        "on the device registry: each kind reaches its active devices; a device APNs calls dead is left out next time",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func onTheRegistry(_ backend: Backend) async throws {
        try await NotificationHarness.with(backend, pageSize: 2) { harness in
            let tokens = NotificationHarness.tokens(6)
            let devices: [(user: String?, tags: [String])] = [
                ("ann", ["beta", "fr"]), ("ann", ["beta"]), ("bob", ["fr"]), ("cy", []), (nil, ["beta", "fr"]),
                ("bob", ["beta"]),
            ]
            let now = harness.clock.now()
            _ = try await harness.store.devices.register(
                zip(tokens, devices).map { token, device in
                    DeviceRegistration(
                        token: token,
                        app: NotificationHarness.topic,
                        environment: .production,
                        userID: device.user,
                        tags: device.tags,
                        registeredAt: now
                    )
                }
            )
            // APNs says the last device is gone since after its registration: the first send
            // marks it invalid.
            _ = harness.simulator.setToken(
                APNSSimulatorTokenState(token: tokens[5], unregisteredAt: now.addingTimeInterval(1))
            )
            let first = try await Self.create(harness, audience: ["users": ["bob"]])
            #expect(try await harness.worker.runDueJobs() == 1)
            #expect(try await harness.store.counts(id: first.id)[.dead] == 1)

            let cases: [([String: Any], [Int])] = [
                (["users": ["ann", "bob", "nobody"]], [0, 1, 2]),
                (["tags": ["any": ["beta"]]], [0, 1, 4]),
                (["tags": ["all": ["beta", "fr"]]], [0, 4]),
                (["all": true], [0, 1, 2, 3, 4]),
            ]
            var ids: [UUID] = []
            for (audience, _) in cases { ids.append(try await Self.create(harness, audience: audience).id) }
            #expect(try await harness.worker.runDueJobs() == cases.count)
            var expected: [String: Int] = [tokens[2]: 1]  // the first send; the refused push is no delivery
            for ((audience, indices), id) in zip(cases, ids) {
                let notification = try #require(try await harness.store.notification(id: id))
                #expect(notification.status == .done, "\(audience)")
                let results = try await harness.results(id)
                #expect(Set(results.map(\.token)) == Set(indices.map { tokens[$0] }), "\(audience)")
                #expect(results.allSatisfy { $0.status == .sent })
                for index in indices { expected[tokens[index], default: 0] += 1 }
            }
            #expect(Self.delivered(harness.simulator) == expected)
        }
    }

    @Test("wait=true is refused for an audience resolved at send time")
    func waitRefused() async throws {
        try await NotificationHarness.with(.sqliteMemory, resolver: FakeRegistry()) { harness in
            let request = try NotificationRequest.parse(
                Array(#"{"audience": {"all": true}, "payload": {"aps": {"alert": "Hi"}}}"#.utf8),
                now: harness.clock.now()
            )
            await #expect(throws: NotificationError.self) { try await harness.service.createAndWait(request) }
            #expect(try await harness.store.list(NotificationListQuery()).items.isEmpty)
        }
    }
}
