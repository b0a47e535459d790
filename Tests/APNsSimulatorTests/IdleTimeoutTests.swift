import APNs
import APNsSimulator
import AsyncTestSupport
import Foundation
import HTTP2
import HeraldIO
import Testing

/// `Configuration.idleTimeout`: connections without requests or PINGs get GOAWAY `IdleTimeout`.
@Suite struct IdleTimeoutTests {
    /// The simulator's and the clients' own loop: other tests running meanwhile can keep the
    /// shared loop busy for a second or more (throughput checks in debug builds), and PINGs
    /// handled that late would make a pinging connection look idle.
    let loop = EventLoop(name: "idle-timeout-test")

    func connect(_ fixture: SimulatorFixture, pingInterval: Duration?) async throws -> HTTP2ClientConnection {
        var tls = TLSConfiguration.makeClient()
        tls.additionalTrustRootsFile = fixture.simulator.caFile
        var configuration = SimulatorFixture.connectionConfiguration()
        configuration.pingInterval = pingInterval
        configuration.eventLoop = loop
        return try await HTTP2ClientConnection.connect(
            host: "127.0.0.1",
            port: fixture.simulator.port,
            tls: tls,
            configuration: configuration
        )
    }

    /// Connects and sends `push`, answered 200. The idle timeout counts from the connection's
    /// set-up, so a machine that stalls longer than it between connecting and sending sees the
    /// connection closed as idle before its request: that is the feature at work, and the next
    /// connection (up to ten: a full run with builds beside it once stalled three in a row) tries
    /// again.
    func connectAndSend(
        _ fixture: SimulatorFixture,
        _ push: HTTP2Request,
        pingInterval: Duration?
    ) async throws -> HTTP2ClientConnection {
        var attempt = 0
        while true {
            attempt += 1
            let connection = try await connect(fixture, pingInterval: pingInterval)
            do {
                let response = try await connection.send(push)
                #expect(response.status == 200)
                return connection
            } catch  where attempt < 10 && connection.status.goAway?.reason == "IdleTimeout" {
                await connection.close()
            }
        }
    }

    @Test func anIdleConnectionGetsGoAwayIdleTimeout() async throws {
        defer { loop.shutdown() }
        // The timeout is counted from the connection's set-up, so it must outlast the time a
        // loaded machine takes between connecting and sending; the request is built beforehand.
        try await withSimulator(configure: {
            $0.idleTimeout = .seconds(2)
            $0.eventLoop = loop
        }) { fixture in
            let push = fixture.devicePush(jwt: try fixture.jwt())
            let connection = try await connectAndSend(fixture, push, pingInterval: nil)
            try await eventually { connection.status.goAway != nil }
            #expect(connection.status.goAway?.reason == "IdleTimeout")
            await connection.close()
        }
    }

    @Test func pingsKeepAConnectionOpen() async throws {
        defer { loop.shutdown() }
        // A PING every 50 ms against a five-second timeout. Each connection sends as soon as it
        // is up: the timeout counts from set-up, and on a loaded machine another connection's
        // first request in between once took longer than two seconds. The simulator's idle check
        // runs in a task while the loop thread reads the PINGs: a clean-clone run with every suite
        // at once on two cores once left that thread unscheduled for two seconds, PINGs unread,
        // and the pinging connection was closed as idle. Five seconds leaves that margin.
        try await withSimulator(configure: {
            $0.idleTimeout = .seconds(5)
            $0.eventLoop = loop
        }) { fixture in
            let push = fixture.devicePush(jwt: try fixture.jwt())
            let pinging = try await connectAndSend(fixture, push, pingInterval: .milliseconds(50))
            let silent = try await connectAndSend(fixture, push, pingInterval: nil)
            // By the time the silent connection is told it is idle, the pinging one has been
            // without requests at least as long.
            try await eventually { silent.status.goAway != nil }
            #expect(pinging.status.goAway == nil)
            #expect(pinging.status.isUsable)
            await pinging.close()
            await silent.close()
        }
    }
}
