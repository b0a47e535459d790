import HeraldCore

/// Splitting paths into segments and matching them against route patterns.
extension Router {
    /// Path segments after the leading `/`: `/a/b/` → `a`, `b`, `` (the trailing slash counts).
    static func split(_ path: String) -> [Substring] {
        // `/` is ASCII, so every UTF-8 index next to one is also a character boundary.
        var segments: [Substring] = []
        let utf8 = path.utf8
        var start = utf8.startIndex
        if utf8.first == UInt8(ascii: "/") { start = utf8.index(after: start) }
        var index = start
        while index != utf8.endIndex {
            if utf8[index] == UInt8(ascii: "/") {
                segments.append(path[start..<index])
                start = utf8.index(after: index)
            }
            index = utf8.index(after: index)
        }
        if start != utf8.startIndex || !path.isEmpty { segments.append(path[start..<utf8.endIndex]) }
        return segments
    }

    /// How many segments ``split(_:)`` would find in `path`.
    static func segmentCount(_ path: UnsafeBufferPointer<UInt8>) -> Int {
        guard !path.isEmpty else { return 0 }
        var count = 1
        for (index, byte) in path.enumerated() where byte == UInt8(ascii: "/") && index > 0 { count += 1 }
        return count
    }

    /// The ranges of `path`'s segments, in order, handed to `body` one by one until it returns
    /// `false`; the same segments as ``split(_:)``. `path` has ``segmentCount(_:)`` of them.
    static func forEachSegment(
        _ path: UnsafeBufferPointer<UInt8>,
        _ body: (Int, Range<Int>) -> Bool
    ) -> Bool {
        guard !path.isEmpty else { return true }
        var start = path[0] == UInt8(ascii: "/") ? 1 : 0
        var number = 0
        while true {
            var end = start
            while end < path.count, path[end] != UInt8(ascii: "/") { end += 1 }
            guard body(number, start..<end) else { return false }
            guard end < path.count else { return true }
            start = end + 1
            number += 1
        }
    }

    /// Whether `path` (without escapes, with as many segments as `pattern`) matches `pattern`.
    static func matches(_ pattern: [Segment], _ path: UnsafeBufferPointer<UInt8>) -> Bool {
        forEachSegment(path) { number, range in
            switch pattern[number] {
            case .literal(_, let literal):
                return literal.count == range.count && literal.elementsEqual(path[range])
            case .parameter:
                return !range.isEmpty
            }
        }
    }

    /// The parameters of a route that matches `path` (without escapes).
    static func parameters(_ pattern: [Segment], _ path: UnsafeBufferPointer<UInt8>) -> PathParameters {
        var parameters = PathParameters()
        _ = forEachSegment(path) { number, range in
            if case .parameter(let name) = pattern[number] {
                parameters.append(
                    name: name,
                    value: String(decoding: UnsafeBufferPointer(rebasing: path[range]), as: UTF8.self)
                )
            }
            return true
        }
        return parameters
    }

    static func matches(_ pattern: [Segment], _ segments: [Substring]) -> Bool {
        guard pattern.count == segments.count else { return false }
        for (expected, actual) in zip(pattern, segments) {
            switch expected {
            case .literal(let literal, _):
                if actual.utf8Contains(UInt8(ascii: "%")) {
                    guard literal == RequestTarget.percentDecode(actual) ?? String(actual) else { return false }
                } else {
                    guard literal.utf8.elementsEqual(actual.utf8) else { return false }
                }
            case .parameter:
                guard !actual.isEmpty else { return false }
            }
        }
        return true
    }

    /// The decoded parameters of a route that ``matches(_:_:)``.
    static func parameters(_ pattern: [Segment], _ segments: [Substring]) -> PathParameters {
        var parameters = PathParameters()
        for (expected, actual) in zip(pattern, segments) {
            if case .parameter(let name) = expected {
                parameters.append(name: name, value: RequestTarget.percentDecode(actual) ?? String(actual))
            }
        }
        return parameters
    }

    /// Whether `rhs` beats `lhs`: at their first differing segment, `rhs` has a literal where
    /// `lhs` has a parameter. Ties keep the route registered first.
    static func isLessSpecific(_ lhs: Route, than rhs: Route) -> Bool {
        for (left, right) in zip(lhs.segments, rhs.segments) {
            switch (left, right) {
            case (.parameter, .literal): return true
            case (.literal, .parameter): return false
            default: continue
            }
        }
        return false
    }
}
