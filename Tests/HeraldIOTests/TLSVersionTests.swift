import AsyncTestSupport
import HeraldIO
import Testing

@Suite struct TLSVersionTests {
    @Test("a TLS 1.3-only server negotiates TLS 1.3 with a default client")
    func tls13OnlyServerNegotiates13() async throws {
        let loop = EventLoop(name: "tls13-ok")
        defer { loop.shutdown() }
        let server = try RecordingServer(
            loop: loop,
            tls: try TestIdentity.shared.serverContext(minimumVersion: .tls13)
        )
        let client = RecordingHandler()
        let channel = try await Channel.connect(
            host: "127.0.0.1",
            port: server.listener.port,
            tls: try TestIdentity.shared.clientContext(),
            timeout: testConnectTimeout,
            eventLoop: loop,
            handler: client
        )
        #expect(await onLoop(loop) { channel.tlsVersion } == .tls13)
        #expect(await onLoop(loop) { channel.applicationProtocol } == "h2")
        let peer = try await server.first()
        try await waitFor(peer.active, "the server side of the handshake")
        let peerChannel = try #require(peer.channel)
        #expect(await onLoop(loop) { peerChannel.tlsVersion } == .tls13)
        loop.execute { channel.close() }
        try await waitFor(peer.inactive, "the server to see the close")
        #expect(peer.inactiveError == nil)
    }

    @Test("a TLS 1.3-only server refuses a client that offers at most TLS 1.2")
    func tls13OnlyServerRefuses12() async throws {
        let loop = EventLoop(name: "tls13-refuses-12")
        defer { loop.shutdown() }
        let server = try RecordingServer(
            loop: loop,
            tls: try TestIdentity.shared.serverContext(minimumVersion: .tls13)
        )
        let client = RecordingHandler()
        let error = await #expect(throws: TLSError.self) {
            _ = try await Channel.connect(
                host: "127.0.0.1",
                port: server.listener.port,
                tls: try TestIdentity.shared.clientContext(maximumVersion: .tls12),
                timeout: testConnectTimeout,
                eventLoop: loop,
                handler: client
            )
        }
        #expect(error?.code == .handshakeFailed)
        #expect(error?.message.contains("version") == true, "OpenSSL names the version: \(String(describing: error))")
        // The server accepted the TCP connection but its handler never became active.
        try await waitFor(server.firstAccepted, "the server to accept the TCP connection")
        #expect(server.accepted.allSatisfy { !$0.active.isOpen })
        #expect(!client.active.isOpen)
    }

    @Test("a default server speaks TLS 1.2 to a client that offers at most TLS 1.2")
    func defaultServerAccepts12() async throws {
        let loop = EventLoop(name: "tls12-ok")
        defer { loop.shutdown() }
        let server = try RecordingServer(loop: loop, tls: try TestIdentity.shared.serverContext())
        let channel = try await Channel.connect(
            host: "127.0.0.1",
            port: server.listener.port,
            tls: try TestIdentity.shared.clientContext(maximumVersion: .tls12),
            timeout: testConnectTimeout,
            eventLoop: loop,
            handler: RecordingHandler()
        )
        #expect(await onLoop(loop) { channel.tlsVersion } == .tls12)
        loop.execute { channel.close(mode: .abort) }
    }
}
