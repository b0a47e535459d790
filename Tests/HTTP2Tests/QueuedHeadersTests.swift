import AsyncTestSupport
import Foundation
import HTTP2
import HeraldCore
import HeraldIO
import Synchronization
import Testing

/// Requests whose HEADERS are still queued inside nghttp2 when they fail: nghttp2 opens their
/// stream only when it prepares the frame, reports "not sent", then closes the stream. The
/// session must not have released the stream's object by then (run under AddressSanitizer by
/// `make test`, which reports the use after free this once was).
@Suite(.serialized, .timeLimit(.minutes(1)))
struct QueuedHeadersTests {
    @Test("requests queued behind backed-up output: timeout, cancel and GOAWAY fail them, then nghttp2 closes them")
    func queuedHeadersFail() async throws {
        let peer = try StalledPeer()
        defer { peer.close() }
        let connecting = Task {
            try await HTTP2ClientConnection.connect(
                host: "127.0.0.1",
                port: peer.port,
                tls: nil,
                configuration: clientConfiguration(requestTimeout: .seconds(50))
            )
        }
        try await peer.acceptAndGreet()
        let connection = try await connecting.value

        // A body larger than every buffer between the two (the peer reads nothing): the client's
        // output stays above its high-water mark, so later requests wait inside nghttp2.
        let bodySize = 32 << 20
        let large = Task {
            try await connection.send(HTTP2Request(path: "/large", body: [UInt8](repeating: 7, count: bodySize)))
        }
        try await eventually { connection.status.activeStreams == 1 }

        // Timeout: "before it was sent" (safe to retry) shows the HEADERS were still queued. The
        // first tries may go out before the output has backed up.
        var timedOutQueued = false
        for _ in 0..<50 where !timedOutQueued {
            let error = await expectError {
                try await connection.send(HTTP2Request(path: "/timeout", timeout: .milliseconds(100)))
            }
            let http2Error = try #require(error as? HTTP2Error)
            #expect(http2Error.code == .requestTimeout)
            timedOutQueued = http2Error.isSafeToRetry
        }
        #expect(timedOutQueued)
        let afterTimeout = connection.status.activeStreams

        // Cancellation once the request is in nghttp2 (it counts as active).
        let cancelled = Task { try await connection.send(HTTP2Request(path: "/cancel")) }
        try await eventually { connection.status.activeStreams == afterTimeout + 1 }
        cancelled.cancel()
        let cancelledResult = await cancelled.result
        #expect(throws: CancellationError.self) { try cancelledResult.get() }

        // GOAWAY arrives while a request's HEADERS wait: it can no longer be sent.
        let refused = Task { try await connection.send(HTTP2Request(path: "/refused")) }
        try await eventually { connection.status.activeStreams == afterTimeout + 2 }
        try peer.send(StalledPeer.goAway(lastStreamID: 1))
        try await eventually { connection.status.goAway != nil }

        // The peer reads again: nghttp2 prepares the queued HEADERS, reports each as not sent and
        // closes its stream.
        let draining = peer.startDraining()
        let refusedError = try #require(await refused.result.failure as? HTTP2Error)
        #expect(refusedError.code == .goAway)
        #expect(refusedError.isSafeToRetry)
        try await eventually { connection.status.activeStreams == 1 }

        peer.close()
        await draining.value
        let largeError = try #require(await large.result.failure as? HTTP2Error)
        #expect(largeError.code == .connectionClosed)
        try await eventually { connection.status.isClosed }
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

/// A cleartext HTTP/2 peer made of a plain socket: it sends its SETTINGS (100 streams, the
/// largest flow-control windows) and then reads nothing until ``startDraining()``, so the
/// client's output backs up behind it. It writes only fixed frames and never parses any.
final class StalledPeer: Sendable {
    let port: Int
    private let listener: Int32
    private let connection = Mutex<Int32>(-1)
    private let threads = BlockingExecutor(name: "stalled-peer", threadCount: 2)

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw IOError(operation: "socket", errno: errno) }
        // A small receive buffer (inherited by the accepted socket): the backlog reaches the
        // client sooner, with less data.
        var receiveBuffer: Int32 = 16_384
        setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &receiveBuffer, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(listener, generic, length) == 0 && listen(listener, 4) == 0
                    && getsockname(listener, generic, &length) == 0
            }
        }
        guard bound else {
            let error = IOError(operation: "bind", errno: errno)
            Glibc.close(listener)
            throw error
        }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit {
        let fd = connection.withLock { $0 }
        if fd >= 0 { Glibc.close(fd) }
        Glibc.close(listener)
        threads.shutdown()
    }

    /// Accepts the client's connection and sends the peer's SETTINGS and a connection
    /// WINDOW_UPDATE.
    func acceptAndGreet() async throws {
        let listener = self.listener
        let accepted = try await threads.run { () throws -> Int32 in
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { throw IOError(operation: "accept", errno: errno) }
            return fd
        }
        connection.withLock { $0 = accepted }
        try send(Self.settings + Self.connectionWindowUpdate)
    }

    /// Writes `bytes` whole (small frames: the peer's send buffer is empty).
    func send(_ bytes: [UInt8]) throws {
        let fd = connection.withLock { $0 }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard written > 0 else { throw IOError(operation: "write", errno: errno) }
            offset += written
        }
    }

    /// Reads and discards everything the client sends from now on, until the socket closes;
    /// the task ends then.
    func startDraining() -> Task<Void, Never> {
        let fd = connection.withLock { $0 }
        let threads = self.threads
        return Task {
            _ = try? await threads.run {
                var buffer = [UInt8](repeating: 0, count: 1 << 16)
                while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
            }
        }
    }

    /// Shuts the connection down (the client sees it close) and stops accepting.
    func close() {
        connection.withLock { fd in
            guard fd >= 0 else { return }
            shutdown(fd, Int32(SHUT_RDWR))
        }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    /// SETTINGS: MAX_CONCURRENT_STREAMS 100, INITIAL_WINDOW_SIZE 2^31-1.
    static let settings: [UInt8] =
        [0, 0, 12, 0x04, 0, 0, 0, 0, 0]
        + [0, 0x03, 0, 0, 0, 100]
        + [0, 0x04, 0x7F, 0xFF, 0xFF, 0xFF]

    /// WINDOW_UPDATE on stream 0 to the largest connection window (2^31-1 - 65,535).
    static let connectionWindowUpdate: [UInt8] = [0, 0, 4, 0x08, 0, 0, 0, 0, 0] + [0x7F, 0xFF, 0x00, 0x00]

    /// GOAWAY, NO_ERROR.
    static func goAway(lastStreamID: UInt32) -> [UInt8] {
        [0, 0, 8, 0x07, 0, 0, 0, 0, 0]
            + withUnsafeBytes(of: lastStreamID.bigEndian) { Array($0) }
            + [0, 0, 0, 0]
    }
}
