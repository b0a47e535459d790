/// Comparisons of secrets whose time does not reveal where they differ.
public enum ConstantTime {
    /// Equality whose time depends only on the lengths, not on where the bytes differ: for keys,
    /// tokens and digests a caller presents.
    public static func equal(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        var difference = UInt64(lhs.count ^ rhs.count)
        let length = max(lhs.count, rhs.count)
        for index in 0..<length {
            let left = index < lhs.count ? lhs[index] : 0
            let right = index < rhs.count ? rhs[index] : 0
            difference |= UInt64(left ^ right)
        }
        return difference == 0
    }

    /// ``equal(_:_:)`` of two strings' UTF-8.
    public static func equal(_ lhs: String, _ rhs: String) -> Bool {
        equal(Array(lhs.utf8), Array(rhs.utf8))
    }
}
