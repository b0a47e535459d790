import Glibc
import HeraldCore

/// What matching needs of every route, as plain values in flat arrays, for paths without `%`
/// escapes: a request is matched against every route without retaining any of them or copying
/// their segments, and paths are compared byte by byte.
struct MatchTable: Sendable {
    private struct Entry: Sendable {
        /// Index in `methods`.
        var method: Int
        var segmentCount: Int
        /// The route's first segment in `segments`.
        var firstSegment: Int
    }

    private struct SegmentKey: Sendable {
        /// Where a literal's bytes start in `literals`; -1 for a parameter.
        var literalStart: Int
        var literalCount: Int

        var isParameter: Bool { literalStart < 0 }
    }

    /// Per route, in the router's order.
    private let entries: [Entry]
    private let segments: [SegmentKey]
    private let literals: [UInt8]
    /// The routes' distinct methods; ``Entry/method`` indexes them.
    private let methods: [String]

    /// Each route's method and segments: a literal's bytes, or `nil` for a parameter.
    init(_ routes: [(method: String, literals: [[UInt8]?])]) {
        var entries: [Entry] = []
        var segments: [SegmentKey] = []
        var literals: [UInt8] = []
        var methods: [String] = []
        for route in routes {
            let method =
                methods.firstIndex(of: route.method)
                ?? {
                    methods.append(route.method)
                    return methods.count - 1
                }()
            entries.append(Entry(method: method, segmentCount: route.literals.count, firstSegment: segments.count))
            for literal in route.literals {
                if let literal {
                    segments.append(SegmentKey(literalStart: literals.count, literalCount: literal.count))
                    literals.append(contentsOf: literal)
                } else {
                    segments.append(SegmentKey(literalStart: -1, literalCount: 0))
                }
            }
        }
        self.entries = entries
        self.segments = segments
        self.literals = literals
        self.methods = methods
    }

    /// The most specific route for `method` whose pattern matches `rawPath`, and with `alsoGet`
    /// the most specific GET route (for HEAD); `nil` when `rawPath` has an escape (the caller
    /// matches it the slow way).
    func match(method: String, alsoGet: Bool, rawPath: String) -> (exact: Int?, get: Int?)? {
        let wanted = methods.firstIndex(of: method) ?? -1
        let get = alsoGet ? methods.firstIndex(of: "GET") ?? -1 : -1
        guard
            let found = rawPath.utf8.withContiguousStorageIfAvailable({ path -> (Int?, Int?)? in
                if let base = path.baseAddress, memchr(base, Int32(UInt8(ascii: "%")), path.count) != nil { return nil }
                return match(wanted, get, path)
            }) ?? nil
        else {
            return nil
        }
        return (exact: found.0, get: found.1)
    }

    private func match(_ wanted: Int, _ get: Int, _ path: UnsafeBufferPointer<UInt8>) -> (Int?, Int?) {
        guard wanted >= 0 || get >= 0 else { return (nil, nil) }
        let count = Self.segmentCount(path)
        return entries.withUnsafeBufferPointer { entries in
            segments.withUnsafeBufferPointer { segments in
                literals.withUnsafeBufferPointer { literals in
                    var exact: Int?
                    var getMatch: Int?
                    for index in 0..<entries.count where entries[index].segmentCount == count {
                        let method = entries[index].method
                        guard method == wanted || method == get else { continue }
                        let first = entries[index].firstSegment
                        guard Self.matches(segments[first..<first + count], literals, path) else { continue }
                        if method == wanted {
                            if exact.map({ isLessSpecific($0, than: index, segments, entries) }) ?? true {
                                exact = index
                            }
                        } else if getMatch.map({ isLessSpecific($0, than: index, segments, entries) }) ?? true {
                            getMatch = index
                        }
                    }
                    return (exact, getMatch)
                }
            }
        }
    }

    /// How many segments `path` has (the leading `/` starts the first; a trailing one adds an
    /// empty last).
    private static func segmentCount(_ path: UnsafeBufferPointer<UInt8>) -> Int {
        guard !path.isEmpty else { return 0 }
        var count = 1
        var index = 1
        while index < path.count {
            if path[index] == UInt8(ascii: "/") { count += 1 }
            index += 1
        }
        return count
    }

    /// Whether `path` (with as many segments as `pattern`) matches it.
    private static func matches(
        _ pattern: Slice<UnsafeBufferPointer<SegmentKey>>,
        _ literals: UnsafeBufferPointer<UInt8>,
        _ path: UnsafeBufferPointer<UInt8>
    ) -> Bool {
        var start = path.first == UInt8(ascii: "/") ? 1 : 0
        for segment in pattern {
            var end = start
            while end < path.count, path[end] != UInt8(ascii: "/") { end += 1 }
            if segment.isParameter {
                guard end > start else { return false }
            } else {
                guard end - start == segment.literalCount else { return false }
                guard
                    segment.literalCount == 0
                        || memcmp(
                            path.baseAddress! + start,
                            literals.baseAddress! + segment.literalStart,
                            segment.literalCount
                        )
                            == 0
                else { return false }
            }
            start = end + 1
        }
        return true
    }

    /// Whether route `rhs` beats route `lhs`: at their first differing segment, `rhs` has a
    /// literal where `lhs` has a parameter. Ties keep the route registered first.
    private func isLessSpecific(
        _ lhs: Int,
        than rhs: Int,
        _ segments: UnsafeBufferPointer<SegmentKey>,
        _ entries: UnsafeBufferPointer<Entry>
    ) -> Bool {
        let left = entries[lhs].firstSegment
        let right = entries[rhs].firstSegment
        for offset in 0..<min(entries[lhs].segmentCount, entries[rhs].segmentCount) {
            switch (segments[left + offset].isParameter, segments[right + offset].isParameter) {
            case (true, false): return true
            case (false, true): return false
            default: continue
            }
        }
        return false
    }
}
