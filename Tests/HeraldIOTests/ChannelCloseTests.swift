import AsyncTestSupport
import HeraldIO
import Testing

@Suite struct ChannelCloseTests {
    /// A cleartext client channel to a fresh recording server on `loop`.
    private func connect(
        _ loop: EventLoop,
        expectedBytes: Int = .max
    ) async throws -> (RecordingServer, RecordingHandler, Channel) {
        let server = try RecordingServer(loop: loop, expectedBytes: expectedBytes)
        let client = RecordingHandler()
        let channel = try await Channel.connect(
            host: "127.0.0.1",
            port: server.listener.port,
            tls: nil,
            timeout: testConnectTimeout,
            eventLoop: loop,
            handler: client
        )
        return (server, client, channel)
    }

    /// What `write` threw on the loop, as the code of a ``ChannelError`` (nil when it did not
    /// throw).
    private func writeError(_ channel: Channel, _ bytes: [UInt8] = [1, 2, 3]) async -> ChannelError.Code? {
        await onLoop(channel.eventLoop) { () -> ChannelError.Code? in
            do throws(ChannelError) {
                try channel.write(bytes: bytes)
                return nil
            } catch {
                return error.code
            }
        }
    }

    @Test("a write after close(mode: .abort) throws ChannelError.closed")
    func writeAfterAbortThrows() async throws {
        let loop = EventLoop(name: "close-abort-write")
        defer { loop.shutdown() }
        let (server, client, channel) = try await connect(loop)
        #expect(await writeError(channel) == nil, "an open channel takes the write")
        loop.execute { channel.close(mode: .abort) }
        #expect(await writeError(channel) == .closed)
        try await waitFor(client.inactive, "the client to hear channelInactive")
        try await waitFor(try await server.first().inactive, "the server to see the connection end")
        #expect(client.inactiveCount == 1)
    }

    @Test("a write after a graceful close throws at once; what was written before it still arrives")
    func writeAfterGracefulCloseThrows() async throws {
        let loop = EventLoop(name: "close-graceful-write")
        defer { loop.shutdown() }
        let size = 4 << 20
        let (server, client, channel) = try await connect(loop, expectedBytes: size)
        let payload = [UInt8](repeating: 0x5A, count: size)
        // One loop turn: buffer 4 MiB (more than the socket takes at once), flush, close, write.
        let (accepted, refused) = await onLoop(loop) { () -> (ChannelError.Code?, ChannelError.Code?) in
            let accepted: ChannelError.Code?
            do throws(ChannelError) {
                try channel.write(bytes: payload)
                accepted = nil
            } catch {
                accepted = error.code
            }
            channel.flush()
            channel.close(mode: .graceful)
            do throws(ChannelError) {
                try channel.write(bytes: [1])
                return (accepted, nil)
            } catch {
                return (accepted, error.code)
            }
        }
        #expect(accepted == nil)
        #expect(refused == .closed)
        // Graceful: everything written before the close arrives, then the connection ends cleanly.
        let peer = try await server.first()
        try await waitFor(peer.receivedAll, "all \(size) bytes to arrive")
        try await waitFor(peer.inactive, "the server to see the end")
        #expect(peer.received.count == size)
        #expect(peer.inactiveError == nil)
        try await waitFor(client.inactive, "the client to hear channelInactive")
        #expect(client.inactiveError == nil)
    }

    @Test("an abort drops output that was written but not flushed; nothing reaches the peer")
    func abortDropsBufferedOutput() async throws {
        let loop = EventLoop(name: "close-abort-drop")
        defer { loop.shutdown() }
        let (server, client, channel) = try await connect(loop)
        let buffered = await onLoop(loop) { () -> Int in
            try? channel.write(bytes: [UInt8](repeating: 7, count: 1000))
            let buffered = channel.pendingWriteBytes
            channel.close(mode: .abort)
            return buffered
        }
        #expect(buffered == 1000)
        let peer = try await server.first()
        try await waitFor(peer.inactive, "the server to see the connection end")
        #expect(peer.received.isEmpty)
        try await waitFor(client.inactive, "the client to hear channelInactive")
        #expect(await onLoop(loop) { channel.isActive } == false)
    }

    @Test("when the peer closes, the handler hears channelInactive once and writes throw closed")
    func peerCloseThenWriteThrows() async throws {
        let loop = EventLoop(name: "close-by-peer")
        defer { loop.shutdown() }
        let (server, client, channel) = try await connect(loop)
        let peer = try await server.first()
        try await waitFor(peer.active, "the server side to be active")
        let peerChannel = try #require(peer.channel)
        loop.execute { peerChannel.close(mode: .graceful) }
        try await waitFor(client.inactive, "the client to see the peer's close")
        #expect(client.inactiveError == nil, "an orderly close by the peer is not an error")
        #expect(await writeError(channel) == .closed)
        // Closing again after the fact does nothing: still one channelInactive.
        loop.execute { channel.close(mode: .graceful) }
        #expect(await onLoop(loop) { channel.isActive } == false)
        #expect(client.inactiveCount == 1)
    }
}
