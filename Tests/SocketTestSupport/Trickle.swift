import Foundation
public import Glibc

/// A system call that failed while driving trickling clients.
public struct TrickleError: Error, CustomStringConvertible {
    public var operation: String
    public var code: Int32

    public init(operation: String, code: Int32) {
        self.operation = operation
        self.code = code
    }

    public var description: String { "\(operation) failed: \(String(cString: strerror(code)))" }
}

/// Many clients each sending one byte a second, driven by one thread with `poll`.
public enum Trickle {
    public struct Result: Sendable {
        /// Connections established (the server may still close them at once, when full).
        public var connected = 0
        /// Connection attempts refused outright.
        public var refused = 0
        /// Connections that received bytes (an answer) instead of being closed.
        public var answered = 0
        /// Connections still open when the driver gave up.
        public var stillOpen = 0
    }

    /// Peak resident memory of process `pid` (`VmHWM` in `/proc/PID/status`), in bytes.
    public static func peakResidentBytes(of pid: Int32) throws -> Int {
        let text = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { throw TrickleError(operation: "read VmHWM of \(pid)", code: EIO) }
        return kilobytes * 1024
    }

    /// Raises this process's soft descriptor limit to `wanted` (or the hard limit, if lower).
    public static func raiseFileLimit(to wanted: rlim_t) throws {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else {
            throw TrickleError(operation: "getrlimit", code: errno)
        }
        guard limit.rlim_cur < wanted else { return }
        limit.rlim_cur = min(wanted, limit.rlim_max)
        guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else {
            throw TrickleError(operation: "setrlimit", code: errno)
        }
    }

    /// Opens `clients` connections to 127.0.0.1:`port`; half trickle their request headers, half
    /// send whole headers announcing a body and trickle the body. Every second each open one
    /// sends its next byte, until the server has closed them all or `giveUpAfter` passed.
    /// `bodyPath` must be a route that reads a body of 1,000 bytes without other checks.
    public static func run(port: Int, clients: Int, bodyPath: String, giveUpAfter: Duration) throws -> Result {
        let header = Array("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Trickle: ".utf8) + Array(repeating: 0x61, count: 200)
        let bodyHead = Array("POST \(bodyPath) HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n".utf8)
        var result = Result()
        var sockets: [Int32] = []
        var scripts: [[UInt8]] = []
        defer { for fd in sockets where fd >= 0 { Glibc.close(fd) } }
        for index in 0..<clients {
            let fd: Int32
            do {
                fd = try Loopback.connect(port: port)
            } catch let error as TrickleError where error.operation == "connect" {
                result.refused += 1
                continue
            }
            result.connected += 1
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            if index % 2 == 1 {
                _ = bodyHead.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                scripts.append(Array(repeating: 0x62, count: 1000))
            } else {
                scripts.append(header)
            }
            sockets.append(fd)
        }

        var sent = [Int](repeating: 0, count: sockets.count)
        var open = sockets.count
        func finish(_ index: Int) {
            Glibc.close(sockets[index])
            sockets[index] = -1
            open -= 1
        }
        let giveUp = ContinuousClock.now + giveUpAfter
        var nextTick = ContinuousClock.now
        var buffer = [UInt8](repeating: 0, count: 4096)
        while open > 0, ContinuousClock.now < giveUp {
            if ContinuousClock.now >= nextTick {
                for index in sockets.indices where sockets[index] >= 0 {
                    var byte = scripts[index][sent[index] % scripts[index].count]
                    let written = Glibc.send(sockets[index], &byte, 1, Int32(MSG_NOSIGNAL))
                    if written == 1 {
                        sent[index] += 1
                    } else if errno != EAGAIN {
                        finish(index)
                    }
                }
                nextTick = nextTick + .seconds(1)
            }
            var polled = sockets.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let remaining = (nextTick - ContinuousClock.now).components
            let wait = max(0, min(1000, remaining.seconds * 1000 + remaining.attoseconds / 1_000_000_000_000_000 + 1))
            let ready = poll(&polled, nfds_t(polled.count), Int32(wait))
            guard ready > 0 else { continue }
            for index in polled.indices where polled[index].fd >= 0 && polled[index].revents != 0 {
                let received = buffer.withUnsafeMutableBytes { recv(polled[index].fd, $0.baseAddress, $0.count, 0) }
                if received > 0 {
                    result.answered += 1
                    finish(index)
                } else if received == 0 || errno != EAGAIN {
                    finish(index)
                }
            }
        }
        result.stillOpen = open
        return result
    }
}
