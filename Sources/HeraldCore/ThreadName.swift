import Foundation

/// The kernel's name of the calling thread, as `top -H`, `gdb`, `perf` and `/proc` show it.
public enum ThreadName {
    /// Names the calling thread (the kernel keeps the first 15 bytes).
    ///
    /// Written to `/proc/thread-self/comm` by the thread itself: Foundation's `Thread.name` does
    /// not reach the OS thread on Linux (Herald's threads showed up as `…-qos.overcommit`), and
    /// `pthread_setname_np` is not visible to Swift.
    public static func setCurrent(_ name: String) {
        let descriptor = open("/proc/thread-self/comm", O_WRONLY)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    }
}
