import Foundation

extension String {
    /// The string without leading and trailing whitespace, as Foundation's
    /// `trimmingCharacters(in: .whitespaces)` would trim it. Header values rarely have any, so
    /// that common case costs two byte comparisons instead of a Foundation call.
    public func trimmingSpaces() -> String {
        let utf8 = self.utf8
        guard let first = utf8.first, let last = utf8.last else { return self }
        func plain(_ byte: UInt8) -> Bool { byte > 0x20 && byte < 0x80 }
        if plain(first) && plain(last) { return self }
        return trimmingCharacters(in: .whitespaces)
    }
}
