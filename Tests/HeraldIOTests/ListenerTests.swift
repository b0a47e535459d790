import AsyncTestSupport
import Glibc
import Synchronization
import Testing

@testable import HeraldIO

@Suite struct ListenerTests {
    @Test("every connection is accepted with a handler of its own, more than one readiness batch of them")
    func acceptsManyConnections() async throws {
        let loop = EventLoop(name: "listener-many")
        defer { loop.shutdown() }
        let server = try RecordingServer(loop: loop)
        let count = 150  // more than the 64 accepts one readiness event takes
        var channels: [Channel] = []
        for _ in 0..<count {
            channels.append(
                try await Channel.connect(
                    host: "127.0.0.1",
                    port: server.listener.port,
                    tls: nil,
                    timeout: testConnectTimeout,
                    eventLoop: loop,
                    handler: RecordingHandler()
                )
            )
        }
        try await eventually("all \(count) connections to be active on the server") {
            let accepted = server.accepted
            return accepted.count == count && accepted.allSatisfy { $0.active.isOpen }
        }
        #expect(Set(server.accepted.map { ObjectIdentifier($0) }).count == count)
        let all = channels
        loop.execute { for channel in all { channel.close(mode: .abort) } }
    }

    @Test("a closed listener refuses new connections; the ones it accepted stay open")
    func closeStopsAccepting() async throws {
        let loop = EventLoop(name: "listener-close")
        defer { loop.shutdown() }
        let server = try RecordingServer(loop: loop)
        let port = server.listener.port
        let client = RecordingHandler(expectedBytes: 1)
        let channel = try await Channel.connect(
            host: "127.0.0.1",
            port: port,
            tls: nil,
            timeout: testConnectTimeout,
            eventLoop: loop,
            handler: client
        )
        let peer = try await server.first()
        try await waitFor(peer.active, "the connection to be accepted")
        server.listener.close()
        await onLoop(loop) {}  // close hops to the loop; this runs after it
        let error = await #expect(throws: IOError.self) {
            _ = try await Channel.connect(
                host: "127.0.0.1",
                port: port,
                tls: nil,
                timeout: testConnectTimeout,
                eventLoop: loop,
                handler: RecordingHandler()
            )
        }
        #expect(error?.errno == ECONNREFUSED)
        let peerChannel = try #require(peer.channel)
        loop.execute {
            try? peerChannel.write(bytes: [42])
            peerChannel.flush()
        }
        try await waitFor(client.receivedAll, "a byte over the connection accepted before the close")
        #expect(client.received == [42])
        loop.execute { channel.close(mode: .abort) }
    }

    /// Makes the listener's accept fail with `code` while `failures` is above zero (counting each
    /// failure down), and accept for real afterwards.
    private func failAccepts(_ listener: TCPListener, code: Int32, failures: Counter, calls: Counter) async {
        await onLoop(listener.eventLoop) {
            let real = listener.acceptCall
            listener.acceptCall = { fd, storage, length in
                if failures.takeOne() {
                    calls.add(1)
                    errno = code
                    return -1
                }
                return real(fd, storage, length)
            }
        }
    }

    @Test("accept failing with EMFILE pauses the listener instead of spinning on the readable socket")
    func descriptorExhaustionPausesAccepting() async throws {
        let loop = EventLoop(name: "listener-emfile")
        defer { loop.shutdown() }
        let server = try RecordingServer(loop: loop, start: false)
        let listener = server.listener
        let failures = Counter(.max)  // out of descriptors until the test says otherwise
        let calls = Counter()
        await failAccepts(listener, code: EMFILE, failures: failures, calls: calls)
        // A pause that outlasts the test: only resumeAccepting() ends it.
        await onLoop(loop) { listener.exhaustionPause = .seconds(3600) }
        server.start()
        let client = RecordingHandler()
        let channel = try await Channel.connect(
            host: "127.0.0.1",
            port: listener.port,
            tls: nil,
            timeout: testConnectTimeout,
            eventLoop: loop,
            handler: client
        )
        try await eventually("the listener to pause after EMFILE") { await onLoop(loop) { listener.isPaused } }
        // The waiting connection keeps the socket readable and epoll is level-triggered: a
        // listener still watching it would try accept again on every one of these loop turns.
        for _ in 0..<20 {
            await onLoop(loop) {}
        }
        #expect(calls.current == 1, "one failed accept, then no more while paused")
        #expect(await onLoop(loop) { listener.exhaustionPauses } == 1)
        #expect(server.accepted.isEmpty)
        // Descriptors are free again: once resumed, the connection that waited is accepted.
        failures.store(0)
        loop.execute { listener.resumeAccepting() }
        let peer = try await server.first()
        try await waitFor(peer.active, "the waiting connection to be accepted after the pause")
        #expect(await onLoop(loop) { listener.isPaused } == false)
        #expect(calls.current == 1)
        loop.execute { channel.close(mode: .abort) }
    }

    @Test(
        "after each exhaustion failure the listener pauses, then resumes by itself and accepts",
        arguments: [EMFILE, ENFILE, ENOBUFS, ENOMEM]
    )
    func pauseEndsByItself(code: Int32) async throws {
        let loop = EventLoop(name: "listener-resume")
        defer { loop.shutdown() }
        let server = try RecordingServer(loop: loop, start: false)
        let listener = server.listener
        let failures = Counter(3)
        let calls = Counter()
        await failAccepts(listener, code: code, failures: failures, calls: calls)
        await onLoop(loop) { listener.exhaustionPause = .milliseconds(5) }
        server.start()
        let channel = try await Channel.connect(
            host: "127.0.0.1",
            port: listener.port,
            tls: nil,
            timeout: testConnectTimeout,
            eventLoop: loop,
            handler: RecordingHandler()
        )
        let peer = try await server.first()
        try await waitFor(peer.active, "the connection to be accepted once the failures are over")
        #expect(calls.current == 3)
        // Every failure paused the listener (the timer resumed it): none was retried at once.
        #expect(await onLoop(loop) { listener.exhaustionPauses } == 3)
        #expect(await onLoop(loop) { listener.isPaused } == false)
        loop.execute { channel.close(mode: .abort) }
    }
}
