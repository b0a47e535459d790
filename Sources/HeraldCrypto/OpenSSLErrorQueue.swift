import COpenSSL

/// OpenSSL's per-thread error queue.
enum OpenSSLErrorQueue {
    /// How many queued errors a message keeps; the rest are dropped (the first ones are the causes).
    private static let maximumKept = 4

    /// Takes every pending error off this thread's queue and returns their texts joined, or nil when
    /// the queue was empty. The texts are OpenSSL's `error:code:library::reason` strings, which
    /// carry no key material.
    static func drain() -> String? {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 {
                break
            }
            if messages.count < maximumKept {
                messages.append(text(for: code))
            }
        }
        return messages.isEmpty ? nil : messages.joined(separator: "; ")
    }

    /// Drops pending errors after an expected failure (a signature that does not verify, a string
    /// that is not an IP address), so they are not blamed on a later operation on this thread.
    static func clear() {
        ERR_clear_error()
    }

    private static func text(for code: UInt) -> String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer in
            buffer.initialize(repeating: 0)
            ERR_error_string_n(code, buffer.baseAddress, buffer.count)
            return String(cString: buffer.baseAddress!)
        }
    }
}
