import Foundation
import HeraldIO
import Synchronization

/// Forwards TCP connections from a port on 127.0.0.1 to another loopback port, until ``close()``
/// closes the port and every connection: a database that goes away mid-run, its port then
/// closed, without stopping the shared test server behind it.
final class LoopbackForwarder: Sendable {
    let port: Int
    private let listener: TCPListener
    /// Every channel, both sides, to close at the end.
    private let channels = Mutex<[Channel]>([])

    init(to targetPort: Int) throws {
        listener = try TCPListener(host: "127.0.0.1", port: 0)
        port = listener.port
        listener.start(tls: nil) { [self] _ in Side(forwarder: self, targetPort: targetPort) }
    }

    /// Closes the port and every forwarded connection; returns once they are closed.
    func close() async {
        listener.close()
        let loop = listener.eventLoop
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute { [self] in
                for channel in channels.withLock({ $0 }) { channel.close(mode: .abort) }
                continuation.resume()
            }
        }
    }

    fileprivate func track(_ channel: Channel) {
        channels.withLock { $0.append(channel) }
    }

    /// One side of a forwarded connection: the accepted one connects out, and each writes what
    /// the other reads. `@unchecked Sendable`: used on the loop thread only (both channels run
    /// on the listener's loop, `Channel.connect`'s default).
    private final class Side: ChannelHandler, @unchecked Sendable {
        let forwarder: LoopbackForwarder?
        let targetPort: Int
        var channel: Channel?
        var peer: Side?
        /// What arrived before the other side was connected.
        var pending: [UInt8] = []

        init(forwarder: LoopbackForwarder?, targetPort: Int, peer: Side? = nil) {
            self.forwarder = forwarder
            self.targetPort = targetPort
            self.peer = peer
        }

        func channelActive(_ channel: Channel) {
            self.channel = channel
            guard let forwarder, peer == nil else { return }
            forwarder.track(channel)
            let outbound = Side(forwarder: nil, targetPort: targetPort, peer: self)
            let port = targetPort
            let loop = channel.eventLoop
            Task {
                do {
                    let connected = try await Channel.connect(
                        host: "127.0.0.1",
                        port: port,
                        tls: nil,
                        timeout: .seconds(5),
                        eventLoop: loop,
                        handler: outbound
                    )
                    forwarder.track(connected)
                    loop.execute { [self] in
                        peer = outbound
                        let written = pending.withUnsafeBytes { bytes in (try? connected.write(bytes)) != nil }
                        guard written else {
                            channel.close(mode: .abort)
                            return
                        }
                        pending = []
                        connected.flush()
                    }
                } catch {
                    loop.execute { channel.close(mode: .abort) }
                }
            }
        }

        func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {
            if let other = peer?.channel {
                do {
                    try other.write(bytes)
                } catch {
                    channel.close(mode: .abort)  // the other side is gone: so is this one
                }
            } else {
                pending += bytes
            }
        }

        func channelReadComplete(_ channel: Channel) {
            peer?.channel?.flush()
        }

        func channelWritable(_ channel: Channel) {}

        func channelInactive(_ channel: Channel, error: (any Error)?) {
            self.channel = nil
            let other = peer
            peer = nil
            other?.channel?.close(mode: .abort)
            other?.peer = nil
        }
    }
}
