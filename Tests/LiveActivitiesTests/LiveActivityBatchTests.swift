import APNs
import APNsTestSupport
import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import Testing

@testable import LiveActivities

/// The updates one batch accepted go out in one `live_activity.send` job: APNs refusing some of
/// them for now must not send the others twice, nor lose the refused ones.
@Suite("LiveActivities: one send job a batch")
struct LiveActivityBatchTests {
    let t = Date(timeIntervalSince1970: 1_790_000_000)

    @Test(
        "a batch whose push to one activity APNs refuses for now: the rest is done, only that update is tried again",
        arguments: Backend.allCases
    )
    func partialRetry(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await LiveActivityHarness.inMemory(backend, clock: clock) { stack in
            try await stack.registerPushToStart(String(repeating: "c1", count: 32), at: t)
            var ids: [UUID] = []
            for _ in 0..<2 {
                ids.append(try await stack.service.create(LiveActivityHarness.request(channel: nil)).0.id)
            }
            #expect(try await stack.worker.runDueJobs() == 2, "the starts")
            let devices = [String(repeating: "c2", count: 32), String(repeating: "c3", count: 32)]
            for (index, id) in ids.enumerated() {
                _ = try await stack.service.register(
                    LiveActivityInput.Instance(
                        activityID: "ios-\(index)",
                        deviceToken: devices[index],
                        updateToken: nil,
                        state: .active
                    ),
                    for: id,
                    userID: "u1",
                    app: nil
                )
            }
            // As many 503s as the client's own three attempts, for the second activity's device only.
            stack.apns.script(
                devices[1],
                .serviceUnavailable(retryAfter: 1),
                .serviceUnavailable(retryAfter: 1),
                .serviceUnavailable(retryAfter: 1)
            )
            let batch = ids.map { id in
                LiveActivityAcceptance(
                    id: id,
                    update: LiveActivityUpdate(event: .update, contentState: .object(["step": .integer(2)])),
                    keepContent: false
                )
            }
            let accepted = try await LiveActivityAcceptor.accept(
                batch,
                store: stack.store,
                queue: stack.queue,
                events: stack.events,
                now: t
            )
            #expect(try accepted.map { try $0.get().silent } == [1, 1])
            let jobs = try await stack.queue.list(statuses: [.pending], kind: LiveActivityJobKind.send)
            #expect(jobs.count == 1, "one job for the batch")

            async let ran = stack.worker.runDueJobs()
            // The client's two waits between its three attempts, on the manual clock.
            try await clock.advanceToNextDeadline()
            try await clock.advanceToNextDeadline()
            #expect(try await ran == 1)
            let batchJob = try #require(jobs.first)
            let first = try #require(try await stack.queue.job(id: batchJob.id))
            #expect(first.status == .done, "the batch job is done: what APNs refused went to a job of its own")
            let retries = try await stack.queue.list(statuses: [.pending], kind: LiveActivityJobKind.send)
            #expect(retries.count == 1)
            let retry = try #require(retries.first)
            let payload = try LiveActivitySendJob(json: try LiveActivityStore.value(retry.payload))
            #expect(payload.sends.map(\.id) == [ids[1]])
            #expect(retry.maxAttempts == 19, "the attempts the batch job had left")
            #expect(retry.dueAt > t, "after the kind's backoff")
            #expect(try await stack.store.deliveries(of: ids[0]).filter { $0.event == "update" }.map(\.status) == [200])
            #expect(try await stack.store.deliveries(of: ids[1]).filter { $0.event == "update" }.map(\.status) == [503])

            clock.jump(to: retry.dueAt.addingTimeInterval(1))
            #expect(try await stack.worker.runDueJobs() == 1)
            #expect(
                try await stack.store.deliveries(of: ids[0]).filter { $0.event == "update" }.count == 1,
                "sent once"
            )
            #expect(
                try await stack.store.deliveries(of: ids[1]).filter { $0.event == "update" }.map(\.status) == [
                    200, 503,
                ]
            )
            #expect(stack.apns.requests(to: devices[0]).map(\.status) == [200], "the first device got it once")
            #expect(stack.apns.requests(to: devices[1]).map(\.status) == [503, 503, 503, 200], "oldest first")
        }
    }

    @Test("a send job written before batches, one update, reads as a batch of one")
    func earlierPayload() throws {
        let id = UUID()
        let text = """
            {"id": "\(id.uuidString)", "instance": "ios-1",
             "update": {"event": "end", "contentState": {"step": 3}, "priority": 10, "timestamp": 1790000001}}
            """
        let job = try LiveActivitySendJob(json: try LiveActivityStore.value(text))
        #expect(job.sends.count == 1)
        #expect(job.sends.first?.id == id)
        #expect(job.sends.first?.instance == "ios-1")
        #expect(job.sends.first?.update.event == .end)
        #expect(job.sends.first?.update.timestamp == 1_790_000_001)
        let batch = LiveActivitySendJob(sends: [LiveActivitySend(id: id, update: job.sends[0].update)])
        let again = try LiveActivitySendJob(json: try LiveActivityStore.value(try LiveActivityStore.text(batch.json)))
        #expect(again == batch)
    }

    @Test("a start, end, expiry or channel job's payload reads back, also as JSONEncoder wrote it before")
    func jobPayloads() throws {
        let id = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        let payloads = [
            LiveActivityJob(id: id),
            LiveActivityJob(id: id, tokens: ["ab", "cd"], round: 2),
            LiveActivityJob(id: id, channel: "dHVuYQ=="),
        ]
        for payload in payloads {
            let job = try payload.newJob(LiveActivityJobKind.start)
            #expect(try LiveActivityJob(payload: job.payload) == payload)
            #expect(
                job.uniqueKey == "live_activity.start:e621e1f8-c36c-495a-93fc-0c247a3e6e5f"
                    + (payload.round.map { ":\($0)" } ?? "")
            )
        }
        let written = #"{"id":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F","round":2,"tokens":["ab","cd"]}"#
        #expect(try LiveActivityJob(payload: written) == payloads[1])
        for broken in [#"{"id":"nope"}"#, #"{"id":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F","tokens":[1]}"#, "[]"] {
            #expect(throws: (any Error).self, "\(broken)") { try LiveActivityJob(payload: broken) }
        }
    }

    @Test("a batch too large for one job payload is split into jobs that each fit")
    func payloadSplit() throws {
        let big = APNSJSONValue.string(String(repeating: "x", count: 4_000))
        let sends = (0..<600).map { _ in
            LiveActivitySend(
                id: UUID(),
                update: LiveActivityUpdate(event: .update, contentState: .object(["note": big]))
            )
        }
        let jobs = try LiveActivitySendJob.jobs(sends)
        #expect(jobs.count > 1)
        #expect(jobs.allSatisfy { $0.payload.utf8.count <= JobQueue.maximumPayloadBytes })
        let decoded = try jobs.flatMap { try LiveActivitySendJob(json: try LiveActivityStore.value($0.payload)).sends }
        #expect(decoded == sends, "every send once, in order")
    }

    @Test("an update stored with JSONEncoder (Herald before the direct writer) reads the same, and back")
    func storedUpdates() throws {
        let updates = [
            LiveActivityUpdate(event: .update, contentState: .object(["step": .integer(2)]), timestamp: 1_790_000_000),
            LiveActivityUpdate(
                event: .end,
                contentState: .object(["note": .string("a/b \"c\" é\n"), "ratio": .double(0.25), "list": [1, 2]]),
                alert: LiveActivityAlert(title: "Done", body: "Signed"),
                staleDate: 1_790_000_600,
                dismissalDate: 1_790_000_900,
                relevanceScore: 50,
                priority: 5,
                timestamp: 1_790_000_001
            ),
        ]
        for update in updates {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let before = try LiveActivityUpdate(json: try APNSJSONValue(parsing: Array(try encoder.encode(update))))
            #expect(before == update)
            let written = try LiveActivityStore.text(update.json)
            #expect(try JSONDecoder().decode(LiveActivityUpdate.self, from: Data(written.utf8)) == update)
            #expect(try LiveActivityUpdate(json: try LiveActivityStore.value(written)) == update)
        }
    }
}
