import Foundation
import Synchronization
import Wake

/// A ``WakeRecordPublisher`` that keeps records in memory and fails as a test scripts it: the
/// domain logic's stand-in for CloudKit (the CloudKit client is tested against the simulator).
final class FakePublisher: WakeRecordPublisher {
    struct Record: Sendable, Hashable {
        var container: String
        var environment: WakeCloudKitEnvironment
        var recordType: String
        var field: String
        var unixSeconds: Int64
        var name: String
    }

    private struct State {
        var records: [Record] = []
        var cleanups: [Int] = []
        var createFailures: [WakeCloudKitError] = []
        var cleanupFailures: [WakeCloudKitError] = []
    }

    private let state = Mutex(State())

    var records: [Record] { state.withLock { $0.records } }
    var cleanups: [Int] { state.withLock { $0.cleanups } }

    /// The next creates fail with these, one each, in order.
    func failCreates(_ errors: [WakeCloudKitError]) {
        state.withLock { $0.createFailures += errors }
    }

    /// The next cleanups fail with these, one each, in order.
    func failCleanups(_ errors: [WakeCloudKitError]) {
        state.withLock { $0.cleanupFailures += errors }
    }

    func createRecord(
        container: String,
        environment: WakeCloudKitEnvironment,
        recordType: String,
        field: String,
        unixSeconds: Int64
    ) async throws -> String {
        try state.withLock { state in
            if !state.createFailures.isEmpty { throw state.createFailures.removeFirst() }
            let name = "record-\(state.records.count + 1)"
            state.records.append(
                Record(
                    container: container,
                    environment: environment,
                    recordType: recordType,
                    field: field,
                    unixSeconds: unixSeconds,
                    name: name
                )
            )
            return name
        }
    }

    func deleteOlderRecords(
        container: String,
        environment: WakeCloudKitEnvironment,
        recordType: String,
        field: String,
        keep: Int
    ) async throws -> Int {
        try state.withLock { state in
            state.cleanups.append(keep)
            if !state.cleanupFailures.isEmpty { throw state.cleanupFailures.removeFirst() }
            let extra = max(0, state.records.count - keep)
            state.records.removeFirst(extra)
            return extra
        }
    }
}
