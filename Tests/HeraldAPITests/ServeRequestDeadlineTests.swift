import Foundation
import Glibc
import ProcessTestSupport
import SocketTestSupport
import Testing

/// `HERALD_REQUEST_TIMEOUT` on a real `herald serve --simulator` with the relay mounted: clients
/// that keep a connection busy by trickling headers, or a relay body, are cut off at the
/// deadline, the process's memory stays bounded, and the server answers again.
@Suite("herald serve: request deadline")
struct ServeRequestDeadlineTests {
    @Test("1,100 clients sending a byte a second are all closed at the deadline; memory stays bounded")
    func tricklingClientsAreClosed() async throws {
        try Trickle.raiseFileLimit(to: 8192)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-trickle-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let herald = try HeraldProcess(
            arguments: ["serve", "--simulator", "--host", "127.0.0.1", "--port", "0"],
            environment: [
                "DATABASE_URL": "sqlite:\(directory.path)/herald.sqlite",
                "HERALD_REQUEST_TIMEOUT": "2", "HERALD_RELAY": "1",
            ]
        )
        let port = try await herald.listeningPort()
        let base = "http://127.0.0.1:\(port)"
        #expect(try await fetch(base + "/healthz").status == 200)
        let pid = herald.child.pid
        let before = try Trickle.peakResidentBytes(of: pid)

        // Gives up after 25 s, far past the 2 s deadline: a server without one keeps every
        // accepted client open (each sends a byte a second, so none is ever idle).
        let started = ContinuousClock.now
        let result = try await Task.detachedResult {
            try Trickle.run(
                port: port,
                clients: 1_100,
                bodyPath: "/push/\(String(repeating: "ab", count: 32))/trickle",
                giveUpAfter: .seconds(25)
            )
        }
        #expect(result.connected + result.refused == 1_100)
        #expect(result.stillOpen == 0, "connections the server never closed")
        #expect(result.answered == 0, "a trickled request was answered instead of cut off")

        // Healthy again within the deadline of the moment the clients started.
        let health = try await fetch(base + "/healthz")
        #expect(health.status == 200)
        #expect(ContinuousClock.now - started < .seconds(25))

        // Peak resident memory over the whole run: 1,100 connections with a few hundred bytes
        // each need a few megabytes; 64 MiB is far above that and far below unbounded growth.
        let after = try Trickle.peakResidentBytes(of: pid)
        #expect(after - before < 64 << 20, "peak resident memory grew by \(after - before) bytes")

        // Every connection the server accepted (up to its 1,024) was cut off by the deadline.
        let metrics = try await fetch(base + "/metrics").body
        let closes = metrics.split(separator: "\n").first {
            $0.hasPrefix("herald_http_request_deadline_closes_total ")
        }
        let closed = closes.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
        #expect(closed >= 1_024, "\(closes.map(String.init) ?? "no herald_http_request_deadline_closes_total")")

        herald.signal(SIGTERM)
        #expect(try await herald.waitForExit(timeout: .seconds(20)) == 0)
    }
}

extension Task where Failure == any Error {
    /// Runs blocking `work` on a thread of its own, off the cooperative pool, and returns its result.
    static func detachedResult(_ work: @escaping @Sendable () throws -> Success) async throws -> Success {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
        }
    }
}
