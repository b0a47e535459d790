import APNsSimulator
import DatabaseTestSupport
import Devices
import Foundation
import Jobs
import Storage
import Synchronization
import Testing

/// Device events hear of a commit after the transaction that invalidated devices, so that what
/// they recorded there (webhook events) is delivered at once rather than at a worker's next look.
@Suite("Notifications: device events after the commit")
struct DeviceEventsCommitTests {
    final class Log: DeviceEvents {
        let entries = Mutex<[String]>([])

        func devicesInvalidated(_ events: [DeviceInvalidatedEvent], on executor: any DatabaseExecutor) async throws {
            entries.withLock { $0.append("invalidated \(events.count)") }
        }

        func invalidationsCommitted() {
            entries.withLock { $0.append("committed") }
        }
    }

    @Test("each transaction that invalidates devices is followed by one commit call; others by none")
    func committedFollowsEachInvalidation() async throws {
        let log = Log()
        try await NotificationHarness.with(.sqliteMemory, deviceEvents: log) { harness in
            let tokens = NotificationHarness.tokens(20)
            for token in tokens.prefix(5) {
                harness.simulator.setToken(
                    APNSSimulatorTokenState(token: token, unregisteredAt: Date(timeIntervalSince1970: 1_750_000_000))
                )
            }
            _ = try await harness.create(tokens: tokens)
            #expect(try await harness.worker.runDueJobs() == 1)
            let entries = log.entries.withLock { $0 }
            let invalidated = entries.compactMap { $0.hasPrefix("invalidated ") ? Int($0.dropFirst(12)) : nil }
            #expect(invalidated.reduce(0, +) == 5)
            #expect(entries.count == 2 * invalidated.count)
            for (index, entry) in entries.enumerated() {
                #expect(entry == (index.isMultiple(of: 2) ? "invalidated \(invalidated[index / 2])" : "committed"))
            }

            // The same tokens again: the dead ones are already invalid, the rest are sent.
            _ = try await harness.create(tokens: Array(tokens.suffix(15)))
            #expect(try await harness.worker.runDueJobs() == 1)
            #expect(log.entries.withLock { $0 } == entries)
        }
    }
}
