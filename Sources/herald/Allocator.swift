import Foundation
import HeraldAllocator
import HeraldCore

/// The memory allocator of this process: jemalloc, linked into the `herald` executable in place
/// of Glibc's malloc.
///
/// Why: Herald's busiest path allocates on one thread and frees on another (a relayed push is
/// built on an HTTP thread and released on the APNs connection's loop thread). Glibc's per-thread
/// cache holds seven blocks per size, so those frees fall back to the allocating thread's arena
/// and its lock, and that thread's next allocations take the slow path; jemalloc returns them in
/// batches (docs/PERFORMANCE.md has the figures).
enum Allocator {
    /// "jemalloc 5.3.0-0-g…", for `herald --version` and the start-up line.
    static var description: String {
        guard let version = Jemalloc.version else { return "jemalloc (version unknown)" }
        return "jemalloc \(version)"
    }

    /// jemalloc's own counts in bytes, `nil` when it keeps none.
    static func statistics() -> (allocated: Int, resident: Int)? { Jemalloc.statistics() }

    /// The process's resident set in bytes (`/proc/self/statm`), `nil` when unreadable.
    static func residentSetBytes() -> Int? {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = statm.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// Memory gauges, read when `/metrics` is rendered. Call once per process: a reading gauge
    /// sums every source registered under its name.
    static func registerMetrics(in registry: MetricsRegistry) {
        registry.gauge(
            "herald_memory_allocated_bytes",
            help: "Bytes allocated and not yet freed (jemalloc's stats.allocated)."
        ) { statistics().map { Double($0.allocated) } }
        registry.gauge(
            "herald_memory_allocator_resident_bytes",
            help: "Bytes jemalloc keeps resident, its caches and metadata included (stats.resident)."
        ) { statistics().map { Double($0.resident) } }
        registry.gauge(
            "herald_process_resident_memory_bytes",
            help: "The process's resident set size, in bytes."
        ) { residentSetBytes().map(Double.init) }
    }
}
