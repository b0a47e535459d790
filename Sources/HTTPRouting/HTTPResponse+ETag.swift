extension HTTPResponse {
    /// This response with a strong `ETag` of its body and `Cache-Control: private, no-cache`; or,
    /// when `request`'s `If-None-Match` names that tag (or is `*`), `304 Not Modified` with the tag
    /// and no body. For small JSON read again and again (a widget's timeline, an App Intent), so
    /// that an unchanged state costs the reader no body.
    ///
    /// The tag is a 64-bit FNV-1a hash of the body: it tells versions apart, it is not a secret.
    /// Only a 200 gets one; other statuses are returned as they are.
    public func conditional(on request: HTTPRequest) -> HTTPResponse {
        guard status == 200 else { return self }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in body {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        let tag = "\"" + String(repeating: "0", count: 16 - hex.count) + hex + "\""
        var response = self
        response.headers.replaceOrAdd(name: "ETag", value: tag)
        response.headers.replaceOrAdd(name: "Cache-Control", value: "private, no-cache")
        guard let wanted = request.headers["If-None-Match"] else { return response }
        let matches = wanted.split(separator: ",").contains { candidate in
            let trimmed = candidate.trimmingWhitespace()
            let strong = trimmed.hasPrefix("W/") ? trimmed.dropFirst(2) : trimmed
            return strong == "*" || strong == tag[...]
        }
        guard matches else { return response }
        var notModified = HTTPResponse(status: 304)
        notModified.headers.replaceOrAdd(name: "ETag", value: tag)
        notModified.headers.replaceOrAdd(name: "Cache-Control", value: "private, no-cache")
        return notModified
    }
}

extension Substring {
    fileprivate func trimmingWhitespace() -> Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }
}
