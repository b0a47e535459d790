import CNGHTTP2
import Foundation
import HeraldCrypto
import HeraldIO
import Synchronization

/// An HTTP/2 server over TLS on 127.0.0.1 that answers every request with a header bomb, for
/// tests of the client's header limits.
///
/// nghttp2 (a server session) reads the client's bytes and answers its SETTINGS and PINGs; the
/// answer to each request is written beside it as raw HEADERS and CONTINUATION frames whose
/// header blocks nghttp2's HPACK deflater encodes (the bomb adds indexed references to one
/// large field). Nothing here parses HTTP/2.
public final class HostileHTTP2Server: Sendable {
    /// What the server answers each request with.
    public enum Bomb: Sendable, CustomStringConvertible {
        /// One header block of `count` small distinct-valued fields (`x-f: <n>`), END_STREAM.
        case manyFields(count: Int)
        /// One field of about 3,000 bytes, then `references` one-byte HPACK references to it:
        /// a 9-frame block that decodes to references × 3 KB.
        case hpackAmplification(references: Int)
        /// HEADERS with `:status: 200` and no END_HEADERS, then empty CONTINUATION frames until
        /// the connection closes.
        case endlessContinuation
        /// A final response of `fields` fields, then trailers of `fields` more: each block below
        /// the limit alone.
        case trailers(fields: Int)
        /// 103 Early Hints blocks of 20 fields each, one after another, until the connection
        /// closes or `totalBytes` were written.
        case informationalFlood(totalBytes: Int)

        public var description: String {
            switch self {
            case .manyFields(let count): "\(count) header fields"
            case .hpackAmplification(let references): "HPACK amplification, \(references) references"
            case .endlessContinuation: "endless CONTINUATION"
            case .trailers(let fields): "trailers, \(fields) + \(fields) fields"
            case .informationalFlood(let total): "1xx flood up to \(total) bytes"
            }
        }
    }

    /// What the server saw.
    public struct Stats: Sendable {
        /// Connections accepted (after TLS).
        public var connections = 0
        /// Requests answered with the bomb.
        public var bombsSent = 0
        /// Bytes of bomb frames handed to the socket.
        public var bombBytes = 0
        /// Connections that ended (the client closed them, or writing failed).
        public var closed = 0
    }

    public let bomb: Bomb
    public let certificatePEM: String
    private let listener: TCPListener
    private let stats = Mutex(Stats())

    public var port: Int { listener.port }
    public var url: String { "https://127.0.0.1:\(port)" }
    public var current: Stats { stats.withLock { $0 } }

    /// Binds 127.0.0.1 on a free port and serves at once, with a certificate made now for
    /// `127.0.0.1` and `localhost` (trust ``certificatePEM``).
    public init(bomb: Bomb) throws {
        self.bomb = bomb
        let certificate = try SelfSignedCertificate.generate(
            commonName: "localhost",
            subjectAlternativeNames: ["localhost", "127.0.0.1"],
            key: P256PrivateKey(),
            validity: .seconds(86_400)
        )
        certificatePEM = certificate.certificatePEM
        var configuration = TLSConfiguration.makeServer(
            certificateChainPEM: certificate.certificatePEM,
            privateKeyPEM: certificate.privateKeyPEM
        )
        configuration.applicationProtocols = ["h2"]
        let tls = try TLSContext(configuration: configuration)
        listener = try TCPListener(host: "127.0.0.1", port: 0)
        listener.start(tls: tls) { [self] _ in HostileConnection(server: self) }
    }

    /// Stops accepting; open connections stay until their peer closes them.
    public func close() {
        listener.close()
    }

    fileprivate func record(_ change: (inout Stats) -> Void) {
        stats.withLock { change(&$0) }
    }
}

/// One connection of a ``HostileHTTP2Server``.
///
/// `@unchecked Sendable`: created on the listener's loop and used only there (every
/// ``ChannelHandler`` method runs on that thread); nghttp2 calls back only during
/// `nghttp2_session_mem_recv`, on that thread too.
private final class HostileConnection: ChannelHandler, @unchecked Sendable {
    let server: HostileHTTP2Server
    private var session: OpaquePointer?
    private var deflater: OpaquePointer?
    private var channel: Channel?
    /// Request streams received and not yet answered.
    var requests: [Int32] = []
    /// An endless bomb in progress: the stream it goes to.
    private var flooding: Int32?
    private var floodBytes = 0

    init(server: HostileHTTP2Server) {
        self.server = server
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, hostileOnFrameReceived)
        nghttp2_session_server_new(&session, callbacks, Unmanaged.passUnretained(self).toOpaque())
        nghttp2_session_callbacks_del(callbacks)
        nghttp2_hd_deflate_new(&deflater, 4096)
    }

    deinit {
        nghttp2_session_del(session)
        nghttp2_hd_deflate_del(deflater)
    }

    func channelActive(_ channel: Channel) {
        self.channel = channel
        server.record { $0.connections += 1 }
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil, 0)
        flushSession()
    }

    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        if nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), bytes.count) < 0 {
            channel.close(mode: .abort)
        }
    }

    func channelReadComplete(_ channel: Channel) {
        flushSession()
        for streamID in requests { answer(streamID) }
        requests = []
        channel.flush()
    }

    func channelWritable(_ channel: Channel) {
        continueFlood()
    }

    func channelInactive(_ channel: Channel, error: (any Error)?) {
        self.channel = nil
        flooding = nil
        server.record { $0.closed += 1 }
    }

    // MARK: output

    private func flushSession() {
        guard let channel else { return }
        while true {
            var data: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &data)
            guard count > 0, let data else { break }
            do {
                try channel.write(UnsafeRawBufferPointer(start: data, count: count))
            } catch {
                return  // the client closed: nothing more to send
            }
        }
        channel.flush()
    }

    private func answer(_ streamID: Int32) {
        server.record { $0.bombsSent += 1 }
        switch server.bomb {
        case .manyFields(let count):
            var fields = [(":status", "200")]
            for index in 0..<count { fields.append(("x-f", String(index))) }
            writeBlock(streamID, deflate(fields), endStream: true)
        case .hpackAmplification(let references):
            // The large field goes into the dynamic table (index 62); 0xBE is "indexed field 62".
            var block = deflate([(":status", "200"), ("x-bomb", String(repeating: "b", count: 3_000))])
            block += [UInt8](repeating: 0xBE, count: references)
            writeBlock(streamID, block, endStream: true)
        case .endlessContinuation:
            writeFrame(type: 0x1, flags: 0, streamID: streamID, payload: deflate([(":status", "200")]))
            flooding = streamID
            continueFlood()
        case .trailers(let fields):
            var response = [(":status", "200")]
            for index in 0..<fields { response.append(("x-r", String(index))) }
            writeBlock(streamID, deflate(response), endStream: false)
            var trailers: [(String, String)] = []
            for index in 0..<fields { trailers.append(("x-t", String(index))) }
            writeBlock(streamID, deflate(trailers), endStream: true)
        case .informationalFlood:
            flooding = streamID
            continueFlood()
        }
    }

    /// Writes more of an endless bomb while the socket takes it (up to 1 MiB buffered).
    private func continueFlood() {
        guard let streamID = flooding, let channel else { return }
        while channel.pendingWriteBytes < 1 << 20 {
            switch server.bomb {
            case .endlessContinuation:
                // Empty CONTINUATION frames, a thousand per write.
                var frames: [UInt8] = []
                for _ in 0..<1_000 { frames += Self.frameHeader(length: 0, type: 0x9, flags: 0, streamID: streamID) }
                write(frames)
            case .informationalFlood(let total):
                guard floodBytes < total else {
                    flooding = nil
                    break
                }
                var fields = [(":status", "103")]
                for index in 0..<20 { fields.append(("link", "</style-\(floodBytes)-\(index).css>; rel=preload")) }
                writeBlock(streamID, deflate(fields), endStream: false)
            default:
                flooding = nil
            }
            guard flooding != nil else { break }
        }
        channel.flush()
    }

    /// A header block as HEADERS plus CONTINUATION frames of at most 16,384 bytes.
    private func writeBlock(_ streamID: Int32, _ block: [UInt8], endStream: Bool) {
        let chunks = stride(from: 0, to: max(block.count, 1), by: 16_384).map {
            Array(block[$0..<min($0 + 16_384, block.count)])
        }
        for (index, chunk) in chunks.enumerated() {
            let last = index == chunks.count - 1
            var flags: UInt8 = last ? 0x4 : 0
            if index == 0, endStream { flags |= 0x1 }
            writeFrame(type: index == 0 ? 0x1 : 0x9, flags: flags, streamID: streamID, payload: chunk)
        }
    }

    /// The 9-byte frame header (RFC 9113 §4.1) and the payload.
    private func writeFrame(type: UInt8, flags: UInt8, streamID: Int32, payload: [UInt8]) {
        write(Self.frameHeader(length: payload.count, type: type, flags: flags, streamID: streamID) + payload)
    }

    private func write(_ bytes: [UInt8]) {
        guard let channel else { return }
        let written = bytes.withUnsafeBytes { buffer in (try? channel.write(buffer)) != nil }
        guard written else { return }  // the client closed: the flood is over
        floodBytes += bytes.count
        server.record { $0.bombBytes += bytes.count }
    }

    static func frameHeader(length: Int, type: UInt8, flags: UInt8, streamID: Int32) -> [UInt8] {
        [
            UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 8),
            UInt8(truncatingIfNeeded: length), type, flags,
            UInt8(truncatingIfNeeded: streamID >> 24), UInt8(truncatingIfNeeded: streamID >> 16),
            UInt8(truncatingIfNeeded: streamID >> 8), UInt8(truncatingIfNeeded: streamID),
        ]
    }

    /// `fields` encoded by nghttp2's HPACK deflater (this connection's compression context).
    private func deflate(_ fields: [(String, String)]) -> [UInt8] {
        var bytes: [UInt8] = []
        var spans: [(name: Int, nameLength: Int, value: Int, valueLength: Int)] = []
        for (name, value) in fields {
            let nameStart = bytes.count
            bytes += Array(name.utf8)
            let valueStart = bytes.count
            bytes += Array(value.utf8)
            spans.append((nameStart, name.utf8.count, valueStart, value.utf8.count))
        }
        return bytes.withUnsafeMutableBufferPointer { bytes -> [UInt8] in
            let base = bytes.baseAddress!
            var nva = spans.map { span in
                nghttp2_nv(
                    name: base + span.name,
                    value: base + span.value,
                    namelen: span.nameLength,
                    valuelen: span.valueLength,
                    flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)
                )
            }
            var output = [UInt8](repeating: 0, count: nghttp2_hd_deflate_bound(deflater, &nva, nva.count))
            let written = output.withUnsafeMutableBufferPointer { out in
                nghttp2_hd_deflate_hd(deflater, out.baseAddress, out.count, &nva, nva.count)
            }
            return written > 0 ? Array(output.prefix(written)) : []
        }
    }
}

private func hostileOnFrameReceived(
    _ session: OpaquePointer?,
    _ frame: UnsafePointer<nghttp2_frame>?,
    _ userData: UnsafeMutableRawPointer?
) -> Int32 {
    guard let frame, let userData, Int(frame.pointee.hd.type) == Int(NGHTTP2_HEADERS.rawValue),
        frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST
    else { return 0 }
    Unmanaged<HostileConnection>.fromOpaque(userData).takeUnretainedValue().requests.append(frame.pointee.hd.stream_id)
    return 0
}
