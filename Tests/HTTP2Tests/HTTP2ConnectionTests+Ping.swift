import AsyncTestSupport
import Foundation
import HTTP2
import HeraldCore
import HeraldIO
import Synchronization
import Testing

/// PINGs: they keep an idle connection alive, and an unanswered one fails the connection.
extension HTTP2ConnectionTests {
    @Test("PINGs keep an idle connection alive past the server's idle timeout")
    func pingKeepsAlive() async throws {
        // Their own loop: throughput tests running meanwhile can keep the shared loop busy for
        // longer than the idle timeout, and late PINGs would make the pinging connection idle.
        let loop = EventLoop(name: "ping-keeps-alive")
        defer { loop.shutdown() }
        let connections = Recorder<HTTP2ServerConnection>()
        var configuration = HTTP2Server.Configuration()
        configuration.idleTimeout = .milliseconds(600)
        configuration.eventLoop = loop
        configuration.onConnection = { connections.append($0) }
        try await withServer(tls: try certificates.serverContext(), configuration: configuration, handler: Self.echo) {
            server in
            var pinging = clientConfiguration()
            pinging.pingInterval = .milliseconds(150)
            pinging.pingTimeout = .seconds(2)
            pinging.eventLoop = loop
            var quiet = clientConfiguration()
            quiet.eventLoop = loop
            let alive = try await connect(to: server, configuration: pinging)
            let silent = try await connect(to: server, configuration: quiet)
            try await eventually("the server's idle timeout to close the connection without PINGs") {
                silent.status.isClosed
            }
            // The pinging connection has by now been without requests at least as long.
            #expect(alive.status.isUsable)
            #expect(try await alive.send(HTTP2Request(path: "/still-there", body: [5])).body == [5])
            try await eventually { connections.all.contains { $0.pingsReceived >= 3 } }
            await alive.close()
        }
    }

    @Test("a server that stops answering PINGs fails the connection within the ping timeout")
    func pingTimeout() async throws {
        let loop = EventLoop(name: "ping-timeout")
        defer { loop.shutdown() }
        var configuration = HTTP2Server.Configuration()
        configuration.answersPings = false
        configuration.eventLoop = loop
        try await withServer(tls: try certificates.serverContext(), configuration: configuration, handler: Self.echo) {
            server in
            var client = clientConfiguration()
            client.pingInterval = .milliseconds(100)
            client.pingTimeout = .milliseconds(300)
            client.eventLoop = loop
            let connection: HTTP2ClientConnection
            do {
                connection = try await connect(to: server, configuration: client)
            } catch let error as HTTP2Error {
                // On a loaded machine (the sanitizer runs) the unanswered PING can time out before
                // the server's SETTINGS arrive: the same failure, seen by connect.
                #expect(error.code == .connectFailed)
                #expect((error.underlying as? HTTP2Error)?.code == .pingTimeout, "\(error)")
                return
            }
            try await eventually(timeout: .seconds(30)) { connection.status.isClosed }
            #expect(connection.status.failure?.code == .pingTimeout)
            let error = await expectError { try await connection.send(HTTP2Request(path: "/dead")) }
            #expect((error as? HTTP2Error)?.code == .pingTimeout)
        }
    }
}
