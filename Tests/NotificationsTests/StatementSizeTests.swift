import Storage
import Testing

@testable import Notifications

/// Multi-row statements on SQLite come in a few fixed sizes, so that their texts stay prepared in
/// the connection's cache; PostgreSQL takes up to ``NotificationStore/batchSize`` rows at once.
@Suite struct StatementSizeTests {
    /// The sizes of the statements that write `count` rows.
    static func sizes(_ count: Int, on dialect: SQLDialect) -> [Int] {
        var sizes: [Int] = []
        var remaining = count
        while remaining > 0 {
            let size = NotificationStore.rowsPerStatement(remaining, on: dialect)
            sizes.append(size)
            remaining -= size
        }
        return sizes
    }

    @Test(
        "every row is written once, in statements of 256, 64, 16, 4 or 1 rows on SQLite",
        arguments: [1, 3, 4, 5, 255, 256, 257, 499, 500, 1_000, 10_007]
    )
    func sqlite(count: Int) {
        let sizes = Self.sizes(count, on: .sqlite)
        #expect(sizes.reduce(0, +) == count)
        #expect(Set(sizes).isSubset(of: [256, 64, 16, 4, 1]))
        #expect(sizes == sizes.sorted(by: >), "the largest first")
    }

    @Test("PostgreSQL writes up to batchSize rows a statement", arguments: [1, 499, 500, 1_001])
    func postgres(count: Int) {
        let sizes = Self.sizes(count, on: .postgres)
        #expect(sizes.reduce(0, +) == count)
        #expect(sizes.dropLast().allSatisfy { $0 == NotificationStore.batchSize })
    }

    @Test("255 rows: 3 statements of 64, 3 of 16, 3 of 4 and 3 of 1")
    func worstUnder256() {
        #expect(Self.sizes(255, on: .sqlite) == [64, 64, 64, 16, 16, 16, 4, 4, 4, 1, 1, 1])
    }
}
