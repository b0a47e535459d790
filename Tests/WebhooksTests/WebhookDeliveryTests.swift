import AsyncTestSupport
import DatabaseTestSupport
import Foundation
import HTTP2
import HeraldCore
import Jobs
import Storage
import Testing

@testable import Webhooks

/// Delivery through libcurl against real receivers (HTTP/2 over TLS, HTTP/1.1 in cleartext) on
/// loopback, on every backend, with a manual clock.
@Suite("webhook delivery")
struct WebhookDeliveryTests {
    @Test(
        "a test event goes to its webhook alone, whatever it subscribes to, signed; an unknown webhook gets none",
        arguments: Backend.allCases
    )
    func testEvent(backend: Backend) async throws {
        let receiver = try Receiver()
        try await receiver.run {
            try await WebhookHarness.with(backend) { harness, clock in
                let tested = try await harness.createWebhook(
                    url: receiver.url,
                    events: [.pollFinalized],
                    secret: "test-secret-0123456789"
                )
                let other = try await harness.createWebhook(url: receiver.url, events: [.pollFinalized])
                let event = WebhookEvent.test(webhook: tested.id, at: clock.now())
                #expect(try await harness.events.send(event, to: tested.id))
                #expect(try await !harness.events.send(WebhookEvent.test(webhook: UUID(), at: clock.now()), to: UUID()))
                #expect(try await harness.store.state(id: tested.id)?.pending == 1)
                #expect(try await harness.store.state(id: other.id)?.pending == 0)

                clock.advance(1)
                try await harness.deliverer.deliverDue(tested.id)
                let delivery = try #require(receiver.deliveries.first)
                #expect(receiver.deliveries.count == 1)
                #expect(delivery.types == ["webhook.test"])
                #expect(delivery.eventIDs == [RequestIdentifier.lowercaseString(event.id)])
                #expect(try await verifySignatureWithOpenSSL(delivery, secret: "test-secret-0123456789"))
                let data = try #require(delivery.events.first?["data"] as? [String: Any])
                #expect(data["webhook_id"] as? String == RequestIdentifier.lowercaseString(tested.id))
                #expect(try await harness.store.state(id: tested.id)?.delivered == 1)
            }
        }
    }

    @Test(
        "a burst becomes one job due 1 s after the first event, then POSTs of at most 100, signed",
        arguments: Backend.allCases
    )
    func batching(backend: Backend) async throws {
        let receiver = try Receiver()
        try await receiver.run {
            try await WebhookHarness.with(backend) { harness, clock in
                let webhook = try await harness.createWebhook(url: receiver.url, secret: "test-secret-0123456789")
                let first = clock.now()
                let recorded = try await harness.recordInvalidations(150, perTransaction: 10)
                // One job for the whole burst, due one batching window after the first event.
                let due = try await harness.pendingDeliveryJobs()
                #expect(due.count == 1)
                #expect(due.first.map { abs($0.timeIntervalSince(first) - 1) < 0.01 } == true)

                clock.advance(1)
                try await harness.deliverer.deliverDue(webhook.id)
                let deliveries = receiver.deliveries
                #expect(deliveries.map(\.eventIDs.count) == [100, 50])
                // Each event once; within a millisecond, events may come in any order.
                let ids = recorded.map { RequestIdentifier.lowercaseString($0.id) }
                #expect(deliveries.flatMap(\.eventIDs).sorted() == ids.sorted())
                #expect(Set(deliveries.flatMap(\.types)) == ["device.invalidated"])
                for delivery in deliveries {
                    #expect(delivery.headers["content-type"] == "application/json")
                    #expect(delivery.headers["user-agent"] == "Herald/test")
                    #expect(try await verifySignatureWithOpenSSL(delivery, secret: "test-secret-0123456789"))
                    #expect(try await !verifySignatureWithOpenSSL(delivery, secret: "another-secret-012345"))
                }
                let event = try #require(deliveries.flatMap(\.events).first { $0["id"] as? String == ids[0] })
                let data = try #require(event["data"] as? [String: Any])
                #expect(data["token"] as? String == String(format: "%064x", 0))
                #expect(data["app"] as? String == "com.example.app")
                #expect(data["environment"] as? String == "production")
                #expect(data["reason"] as? String == "Unregistered")
                #expect(data["invalid_at"] is String)
                #expect(event["created_at"] is String)

                let state = try #require(try await harness.store.state(id: webhook.id))
                #expect(state.pending == 0)
                #expect(state.delivered == 150)
                #expect(harness.metrics.value("herald_webhook_events_total", labels: [("result", "delivered")]) == 150)
            }
        }
    }

    @Test(
        "a receiver error is retried with backoff: the same event ids are delivered again",
        arguments: Backend.allCases
    )
    func retryAfterReceiverError(backend: Backend) async throws {
        let receiver = try Receiver(statuses: [500, 200])
        try await receiver.run {
            try await WebhookHarness.with(backend) { harness, clock in
                let webhook = try await harness.createWebhook(url: receiver.url)
                let recorded = try await harness.recordInvalidations(3, perTransaction: 3)
                clock.advance(1)
                try await harness.deliverer.deliverDue(webhook.id)
                #expect(receiver.deliveries.count == 1)
                let failed = try #require(try await harness.store.state(id: webhook.id))
                #expect(failed.pending == 3)
                #expect(failed.lastError == "the receiver answered HTTP 500")

                // Not due again until the backoff has passed.
                try await harness.deliverer.deliverDue(webhook.id)
                #expect(receiver.deliveries.count == 1)
                let next = try #require(try await harness.store.nextDue(webhook.id))
                #expect(next > clock.now())
                #expect(next <= clock.now().addingTimeInterval(WebhookHarness.configuration().retryBase))

                clock.set(next)
                try await harness.deliverer.deliverDue(webhook.id)
                let deliveries = receiver.deliveries
                #expect(deliveries.count == 2)
                #expect(
                    deliveries[0].eventIDs.sorted()
                        == recorded.map { RequestIdentifier.lowercaseString($0.id) }.sorted()
                )
                #expect(deliveries[1].eventIDs == deliveries[0].eventIDs)
                let state = try #require(try await harness.store.state(id: webhook.id))
                #expect(state.pending == 0)
                #expect(state.delivered == 3)
            }
        }
    }

    @Test("events still failing 24 h after their first attempt are dead and visible", arguments: Backend.allCases)
    func deadAfterRetryWindow(backend: Backend) async throws {
        let receiver = try Receiver(statuses: Array(repeating: 503, count: 1_000))
        var configuration = WebhookHarness.configuration()
        configuration.retryMaximum = 4 * 3_600
        try await receiver.run {
            try await WebhookHarness.with(backend, configuration: configuration) { harness, clock in
                let webhook = try await harness.createWebhook(url: receiver.url)
                try await harness.recordInvalidations(2, perTransaction: 2)
                clock.advance(1)
                let firstAttempt = clock.now()
                var attempts = 0
                while let next = try await harness.store.nextDue(webhook.id), attempts < 100 {
                    clock.set(max(next, clock.now()))
                    try await harness.deliverer.deliverDue(webhook.id)
                    attempts += 1
                }
                #expect(receiver.deliveries.count == attempts)
                // The last attempt is the one at the end of the window, not later.
                #expect(abs(clock.now().timeIntervalSince(firstAttempt) - 24 * 3_600) < 1)
                let state = try #require(try await harness.store.state(id: webhook.id))
                #expect(state.dead == 2)
                #expect(state.pending == 0)
                #expect(state.lastError == "the receiver answered HTTP 503")
                #expect(harness.metrics.value("herald_webhook_events_total", labels: [("result", "dead")]) == 2)
                // The job ends: nothing is pending.
                let job = try #require(try await harness.queue.claim(owner: "test", limit: 10, lease: 60).first)
                #expect(try await harness.deliverer.run(job) == .done)
            }
        }
    }

    @Test("dead events are deleted after their retention when later ones die", arguments: Backend.allCases)
    func deadRetention(backend: Backend) async throws {
        let receiver = try Receiver(statuses: Array(repeating: 500, count: 1_000))
        var configuration = WebhookHarness.configuration()
        configuration.retryWindow = 60
        configuration.deadRetention = 3_600
        try await receiver.run {
            try await WebhookHarness.with(backend, configuration: configuration) { harness, clock in
                let webhook = try await harness.createWebhook(url: receiver.url)
                func failUntilDead() async throws {
                    while let next = try await harness.store.nextDue(webhook.id) {
                        clock.set(max(next, clock.now()))
                        try await harness.deliverer.deliverDue(webhook.id)
                    }
                }
                try await harness.recordInvalidations(2, perTransaction: 2)
                try await failUntilDead()
                #expect(try await harness.store.state(id: webhook.id)?.dead == 2)
                clock.advance(2 * 3_600)
                try await harness.recordInvalidations(1)
                try await failUntilDead()
                #expect(try await harness.store.state(id: webhook.id)?.dead == 1)
            }
        }
    }

    @Test("http:// receivers get HTTP/1.1, signed, from a server that speaks nothing else", arguments: Backend.allCases)
    func cleartextHTTP1Receiver(backend: Backend) async throws {
        let receiver = HTTP1Receiver()
        try await receiver.run { port in
            try await WebhookHarness.with(backend) { harness, clock in
                let webhook = try await harness.createWebhook(
                    url: "http://127.0.0.1:\(port)/hooks?team=1",
                    secret: "test-secret-0123456789"
                )
                let recorded = try await harness.recordInvalidations(2)
                clock.advance(1)
                try await harness.deliverer.deliverDue(webhook.id)
                let deliveries = receiver.deliveries
                #expect(deliveries.map(\.eventIDs.count) == [2])
                #expect(
                    deliveries.flatMap(\.eventIDs).sorted()
                        == recorded.map { RequestIdentifier.lowercaseString($0.id) }.sorted()
                )
                let delivery = try #require(deliveries.first)
                #expect(delivery.headers["content-type"] == "application/json")
                #expect(delivery.headers["user-agent"] == "Herald/test")
                #expect(try await verifySignatureWithOpenSSL(delivery, secret: "test-secret-0123456789"))
                #expect(try await harness.store.state(id: webhook.id)?.delivered == 2)
            }
        }
    }

    @Test("a redirect is not followed: the delivery failed, and last_error says why", arguments: [Backend.sqliteMemory])
    func redirectNotFollowed(backend: Backend) async throws {
        let receiver = HTTP1Receiver(statuses: [302, 307])
        try await receiver.run { port in
            try await WebhookHarness.with(backend) { harness, clock in
                let webhook = try await harness.createWebhook(url: "http://127.0.0.1:\(port)/hooks")
                try await harness.recordInvalidations(1)
                clock.advance(1)
                try await harness.deliverer.deliverDue(webhook.id)
                #expect(receiver.deliveries.count == 1)
                let state = try #require(try await harness.store.state(id: webhook.id))
                #expect(state.pending == 1)
                #expect(state.lastError?.hasPrefix("the receiver answered HTTP 302, a redirect") == true)
                #expect(state.lastError?.contains("does not follow redirects") == true)
            }
        }
    }

    /// DNS rebinding: the name resolved to a public address when the webhook was created and
    /// resolves to 127.0.0.1 at delivery. Both resolutions are injected, so the only address any
    /// connection could reach is the loopback receiver, whatever the code under test does.
    @Test(
        "a name that resolves to 127.0.0.1 at delivery is refused there: dead, the receiver gets nothing",
        arguments: Backend.allCases
    )
    func rebindingRefusedAtDelivery(backend: Backend) async throws {
        let receiver = HTTP1Receiver()
        try await receiver.run { port in
            var configuration = WebhookHarness.configuration()
            configuration.allowPrivate = false
            configuration.resolveOverrides = ["rebind.example:\(port):127.0.0.1"]
            try await WebhookHarness.with(backend, configuration: configuration) { harness, clock in
                let url = "http://rebind.example:\(port)/hooks"
                let policy = WebhookDestinationPolicy(
                    resolve: { _, _ in ["93.184.216.34"] },
                    metrics: harness.metrics
                )
                try await policy.check(url: url)
                let webhook = try await harness.createWebhook(url: url)
                try await harness.recordInvalidations(2, perTransaction: 2)
                clock.advance(1)
                try await harness.deliverer.deliverDue(webhook.id)
                #expect(receiver.deliveries.isEmpty)
                let state = try #require(try await harness.store.state(id: webhook.id))
                #expect(state.dead == 2)
                #expect(state.pending == 0)
                let lastError = try #require(state.lastError)
                #expect(
                    lastError.hasPrefix("destination_not_allowed: the receiver's host resolved to a loopback address")
                )
                #expect(!lastError.contains("127.0.0.1"))
                #expect(
                    harness.metrics.value("herald_webhook_destinations_refused_total", labels: [("stage", "delivery")])
                        == 1
                )
                #expect(harness.metrics.value("herald_webhook_events_total", labels: [("result", "dead")]) == 2)
                // No retry is scheduled: the job ends.
                #expect(try await harness.store.nextDue(webhook.id) == nil)
            }
            // The same setup with HERALD_WEBHOOK_ALLOW_PRIVATE=1 reaches the receiver: the refusal
            // above is the policy's, not a failure to connect.
            configuration.allowPrivate = true
            try await WebhookHarness.with(backend, configuration: configuration) { harness, clock in
                let webhook = try await harness.createWebhook(url: "http://rebind.example:\(port)/hooks")
                try await harness.recordInvalidations(1)
                clock.advance(1)
                try await harness.deliverer.deliverDue(webhook.id)
                #expect(receiver.deliveries.count == 1)
                #expect(try await harness.store.state(id: webhook.id)?.delivered == 1)
            }
        }
    }

    @Test(
        "a receiver sending a header list without end is dropped at 64 KiB, over HTTP/2 and HTTP/1.1; Herald goes on",
        arguments: [PythonReceiver.Mode.bombHTTP2, .bombHTTP1]
    )
    func headerBomb(mode: PythonReceiver.Mode) async throws {
        let fine = try Receiver()
        try await PythonReceiver.with(mode) { bomb in
            try await fine.run {
                try await WebhookHarness.with(.sqliteMemory) { harness, clock in
                    let scheme = mode == .bombHTTP2 ? "https" : "http"
                    let webhook = try await harness.createWebhook(url: "\(scheme)://127.0.0.1:\(bomb.port)/hooks")
                    try await harness.recordInvalidations(1)
                    clock.advance(1)
                    try await harness.deliverer.deliverDue(webhook.id)
                    #expect(bomb.requestCount == 1)
                    let state = try #require(try await harness.store.state(id: webhook.id))
                    #expect(state.pending == 1)
                    if mode == .bombHTTP1 {
                        #expect(
                            state.lastError
                                == "the receiver's response headers exceeded 64 KiB: Herald dropped the connection"
                        )
                    } else {
                        // libcurl gathers an HTTP/2 header block before the header callback sees
                        // it, and drops a peer whose block outgrows its buffer: not a timeout.
                        #expect(state.lastError == "the connection to the receiver failed while receiving its answer")
                    }
                    // The deliverer is fine: the next receiver gets its events.
                    let next = try await harness.createWebhook(url: fine.url)
                    try await harness.recordInvalidations(1)
                    clock.advance(1)
                    try await harness.deliverer.deliverDue(next.id)
                    #expect(try await harness.store.state(id: next.id)?.delivered == 1)
                }
            }
        }
    }

    @Test(
        "an HTTP/1.1-only receiver over TLS (Python's http.server) gets signed events",
        arguments: [Backend.sqliteMemory]
    )
    func pythonReceiverOverTLS(backend: Backend) async throws {
        try await PythonReceiver.with(.record, tls: true) { receiver in
            try await WebhookHarness.with(backend) { harness, clock in
                let webhook = try await harness.createWebhook(
                    url: "https://localhost:\(receiver.port)/hooks",
                    secret: "test-secret-0123456789"
                )
                try await harness.recordInvalidations(3, perTransaction: 3)
                clock.advance(1)
                try await harness.deliverer.deliverDue(webhook.id)
                let deliveries = receiver.deliveries
                #expect(deliveries.map(\.eventIDs.count) == [3])
                let delivery = try #require(deliveries.first)
                #expect(try await verifySignatureWithOpenSSL(delivery, secret: "test-secret-0123456789"))
                #expect(try await harness.store.state(id: webhook.id)?.delivered == 3)
            }
        }
    }

    @Test(
        "events reach only the webhooks subscribed to their type; deleting a webhook drops its events",
        arguments: Backend.allCases
    )
    func subscriptionsAndDelete(backend: Backend) async throws {
        try await WebhookHarness.with(backend) { harness, _ in
            let devices = try await harness.createWebhook(url: "https://a.example/", events: [.deviceInvalidated])
            let finished = try await harness.createWebhook(url: "https://b.example/", events: [.notificationFinished])
            try await harness.recordInvalidations(3)
            #expect(try await harness.store.state(id: devices.id)?.pending == 3)
            #expect(try await harness.store.state(id: finished.id)?.pending == 0)
            #expect(try await harness.store.delete(id: devices.id))
            #expect(try await harness.store.state(id: devices.id) == nil)
            let left = try await harness.database.queryFirst("SELECT COUNT(*) AS n FROM webhook_outbox")?.int("n")
            #expect(left == 0)
            #expect(try await harness.store.list(limit: 10, after: nil).items.map(\.id) == [finished.id])
        }
    }
}
