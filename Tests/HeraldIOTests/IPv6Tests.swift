import AsyncTestSupport
import HeraldIO
import Testing

@Suite struct IPv6Tests {
    @Test("a listener on [::1] accepts a client that connects to ::1, and bytes flow both ways")
    func ipv6Loopback() async throws {
        let loop = EventLoop(name: "ipv6")
        defer { loop.shutdown() }
        let greeting = Array("hello over IPv6".utf8)
        let server = try RecordingServer(host: "::1", loop: loop, expectedBytes: greeting.count)
        let client = RecordingHandler(expectedBytes: 2)
        let channel = try await Channel.connect(
            host: "::1",
            port: server.listener.port,
            tls: nil,
            timeout: testConnectTimeout,
            eventLoop: loop,
            handler: client
        )
        #expect(channel.remoteAddress.isIPv6)
        #expect(channel.remoteAddress.description == "[::1]:\(server.listener.port)")
        loop.execute {
            try? channel.write(bytes: greeting)
            channel.flush()
        }
        let peer = try await server.first()
        try await waitFor(peer.receivedAll, "the greeting to arrive")
        #expect(peer.received == greeting)
        let peerChannel = try #require(peer.channel)
        #expect(peerChannel.remoteAddress.isIPv6)
        #expect(peerChannel.remoteAddress.host == "::1")
        loop.execute {
            try? peerChannel.write(bytes: Array("ok".utf8))
            peerChannel.flush()
        }
        try await waitFor(client.receivedAll, "the answer to arrive")
        #expect(client.received == Array("ok".utf8))
        loop.execute { channel.close() }
        try await waitFor(peer.inactive, "the server to see the close")
    }

    @Test("TLS over [::1] verifies the certificate's ::1 address")
    func ipv6TLS() async throws {
        let loop = EventLoop(name: "ipv6-tls")
        defer { loop.shutdown() }
        let server = try RecordingServer(host: "::1", loop: loop, tls: try TestIdentity.shared.serverContext())
        let channel = try await Channel.connect(
            host: "::1",
            port: server.listener.port,
            tls: try TestIdentity.shared.clientContext(),
            timeout: testConnectTimeout,
            eventLoop: loop,
            handler: RecordingHandler()
        )
        #expect(await onLoop(loop) { channel.tlsVersion } != nil)
        let peer = try await server.first()
        try await waitFor(peer.active, "the server side of the handshake")
        loop.execute { channel.close(mode: .abort) }
    }
}
