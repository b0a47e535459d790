import Foundation
import HeraldIO
import Synchronization

/// A cleartext TCP connection that writes HTTP/2 frames as given and reads frames back, for what
/// a well-behaved client never does (opening streams beyond the server's limit). Frames are built
/// by hand: HPACK "literal without indexing, new name" fields, no Huffman coding.
final class RawFrameConnection: ChannelHandler, @unchecked Sendable {
    // @unchecked Sendable: `buffer` and `channel` are touched only on the event loop thread (the
    // ChannelHandler callbacks and closures sent with `execute`); `frames` is thread-safe.

    struct Frame: Sendable {
        var type: UInt8
        var flags: UInt8
        var streamID: UInt32
        var payload: [UInt8]

        /// SETTINGS entries `(identifier, value)`.
        var settings: [(UInt16, UInt32)] {
            stride(from: 0, to: payload.count - 5, by: 6).map { offset in
                let id = UInt16(payload[offset]) << 8 | UInt16(payload[offset + 1])
                let value = payload[(offset + 2)..<(offset + 6)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                return (id, value)
            }
        }

        /// The error code of RST_STREAM and GOAWAY.
        var errorCode: UInt32 {
            let start = type == 0x7 ? 4 : 0
            return payload[start..<(start + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        }
    }

    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    let frames: AsyncStream<Frame>
    private let continuation: AsyncStream<Frame>.Continuation
    private var buffer: [UInt8] = []
    private var channel: Channel?

    private init() {
        (frames, continuation) = AsyncStream.makeStream(of: Frame.self)
    }

    static func connect(port: Int) async throws -> RawFrameConnection {
        let connection = RawFrameConnection()
        connection.channel = try await Channel.connect(
            host: "127.0.0.1",
            port: port,
            tls: nil,
            timeout: SimulatorFixture.connectTimeout,
            handler: connection
        )
        return connection
    }

    /// Writes `bytes` and flushes, on the loop.
    func write(_ bytes: [UInt8]) {
        guard let channel else { return }
        channel.eventLoop.execute {
            let written = bytes.withUnsafeBytes { buffer in (try? channel.write(buffer)) != nil }
            guard written else { return }  // the simulator closed the connection: the test reads that
            channel.flush()
        }
    }

    func close() {
        guard let channel else { return }
        channel.eventLoop.execute { channel.close(mode: .abort) }
    }

    static func frame(type: UInt8, flags: UInt8, streamID: UInt32, payload: [UInt8]) -> [UInt8] {
        let length = UInt32(payload.count)
        return [
            UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, flags,
            UInt8(streamID >> 24 & 0x7F), UInt8(streamID >> 16 & 0xFF), UInt8(streamID >> 8 & 0xFF),
            UInt8(streamID & 0xFF),
        ] + payload
    }

    /// A HEADERS frame (END_HEADERS, and END_STREAM when `endStream`) with every field a literal.
    static func headers(streamID: UInt32, endStream: Bool, _ fields: [(String, String)]) -> [UInt8] {
        var block: [UInt8] = []
        for (name, value) in fields {
            precondition(name.utf8.count < 127 && value.utf8.count < 127, "short fields only")
            block.append(0x00)
            block.append(UInt8(name.utf8.count))
            block.append(contentsOf: name.utf8)
            block.append(UInt8(value.utf8.count))
            block.append(contentsOf: value.utf8)
        }
        return frame(type: 0x1, flags: endStream ? 0x5 : 0x4, streamID: streamID, payload: block)
    }

    // MARK: ChannelHandler

    func channelActive(_ channel: Channel) {}

    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {
        buffer.append(contentsOf: bytes)
        while buffer.count >= 9 {
            let length = Int(buffer[0]) << 16 | Int(buffer[1]) << 8 | Int(buffer[2])
            guard buffer.count >= 9 + length else { break }
            let streamID = buffer[5..<9].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } & 0x7FFF_FFFF
            continuation.yield(
                Frame(type: buffer[3], flags: buffer[4], streamID: streamID, payload: Array(buffer[9..<(9 + length)]))
            )
            buffer.removeFirst(9 + length)
        }
    }

    func channelReadComplete(_ channel: Channel) {}
    func channelWritable(_ channel: Channel) {}

    func channelInactive(_ channel: Channel, error: (any Error)?) {
        continuation.finish()
    }
}
