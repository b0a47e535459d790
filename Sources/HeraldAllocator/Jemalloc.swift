import CJemalloc

/// The jemalloc binding: what the `herald` executable asks its allocator. Linking this module
/// (and so libjemalloc) into an executable is what replaces Glibc's malloc and free there; the
/// functions below only read jemalloc's version and statistics.
public enum Jemalloc {
    /// jemalloc's version ("5.3.0-0-g…"), `nil` when mallctl refuses to say.
    public static var version: String? {
        herald_jemalloc_version().map { String(cString: $0) }
    }

    /// jemalloc's own counts in bytes, refreshed on each call: what the process has allocated and
    /// not freed, and what jemalloc keeps resident; `nil` when it keeps no statistics.
    public static func statistics() -> (allocated: Int, resident: Int)? {
        var allocated = 0
        var resident = 0
        guard herald_jemalloc_statistics(&allocated, &resident) == 0 else { return nil }
        return (allocated, resident)
    }
}
