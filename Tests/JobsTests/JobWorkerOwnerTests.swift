import Jobs
import Testing

/// The worker's `lease_owner` name is made from values the executable hands in, not read from
/// the process inside Jobs.
@Suite("job worker owner")
struct JobWorkerOwnerTests {
    @Test("owner(host:processID:) is the host (at most 60 characters), the process id and a random suffix")
    func ownerFromGivenValues() {
        let host = String(repeating: "h", count: 70)
        let first = JobWorker.owner(host: host, processID: 4242)
        let second = JobWorker.owner(host: host, processID: 4242)
        #expect(first.hasPrefix(String(repeating: "h", count: 60) + "-4242-"))
        #expect(first.count == 60 + "-4242-".count + 8)
        #expect(first != second, "two workers in one process get different names")
    }
}
