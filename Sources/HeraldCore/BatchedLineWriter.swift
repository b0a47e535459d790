import Dispatch
import Foundation
import Glibc
import Synchronization

/// Lines for a file descriptor (standard error, for logs), written in batches: they are appended
/// to a buffer and a thread of its own writes whatever has gathered with one `write(2)`, so a
/// busy server pays for one system call per batch instead of one per line (docs/PERFORMANCE.md).
/// Lines wait at most about ``gatheringDelay`` for their batch.
///
/// Nothing is lost or reordered:
/// - An *urgent* line (the handler's warnings and worse) is written by the caller before it
///   returns, after everything appended before it.
/// - A caller that finds more than ``limit`` bytes waiting writes them itself: a stalled
///   standard error slows logging down instead of growing the buffer without bound.
/// - ``standardError`` writes whatever is buffered when the process exits normally (`atexit`).
///   A crash can lose the last milliseconds of non-urgent lines.
public final class BatchedLineWriter: Sendable {
    /// Standard error, flushed at a normal exit.
    public static let standardError: BatchedLineWriter = {
        let writer = BatchedLineWriter(fileDescriptor: 2)
        atexit { BatchedLineWriter.standardError.flush() }
        return writer
    }()

    /// How long the thread lets lines gather after the first one before writing them, in seconds.
    public static let gatheringDelay: Double = 0.005

    /// Bytes waiting before callers write them themselves.
    public static let limit = 256 * 1024

    private struct Pending {
        var bytes: [UInt8] = []
        /// The writer thread has been signalled and has not yet taken `bytes`.
        var signalled = false
    }

    private let fileDescriptor: Int32
    private let pending = Mutex(Pending())
    /// Held while taking `pending` and writing it out, so that batches reach the file in order.
    private let output = Mutex(())
    private let wake = DispatchSemaphore(value: 0)

    /// Starts the writer's thread. `fileDescriptor` stays the caller's to close, after the last
    /// ``flush()``; the thread lives as long as the process.
    public init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
        let thread = Thread { [self] in
            ThreadName.setCurrent("herald-log")
            while true {
                wake.wait()
                // Let a batch gather, so that the thread is not woken for every line or two.
                Thread.sleep(forTimeInterval: Self.gatheringDelay)
                flush()
            }
        }
        thread.start()
    }

    /// Appends `line` and a newline; with `urgent`, returns only once they are written.
    public func write(_ line: String, urgent: Bool) {
        var line = line
        let (signal, full) = line.withUTF8 { bytes in
            pending.withLock { pending -> (Bool, Bool) in
                pending.bytes.append(contentsOf: bytes)
                pending.bytes.append(UInt8(ascii: "\n"))
                let full = pending.bytes.count > Self.limit
                guard !urgent, !full, !pending.signalled else { return (false, full) }
                pending.signalled = true
                return (true, full)
            }
        }
        if urgent || full {
            flush()
        } else if signal {
            wake.signal()
        }
    }

    /// Writes everything appended so far.
    public func flush() {
        output.withLock { _ in
            let bytes = pending.withLock { pending -> [UInt8] in
                pending.signalled = false
                var taken: [UInt8] = []
                swap(&taken, &pending.bytes)
                return taken
            }
            guard !bytes.isEmpty else { return }
            bytes.withUnsafeBufferPointer { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = Glibc.write(fileDescriptor, buffer.baseAddress! + offset, buffer.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        return  // Nowhere left to report a failing standard error.
                    }
                    offset += written
                }
            }
        }
    }
}
