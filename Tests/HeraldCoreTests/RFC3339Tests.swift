import Foundation
import HeraldCore
import Testing

@Suite struct RFC3339Tests {
    static func foundation(_ date: Date, fractional: Bool) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: fractional, timeZone: .gmt))
    }

    @Test func formatsUTCWithAndWithoutFractions() throws {
        let date = Date(timeIntervalSince1970: 1_764_419_400.25)
        #expect(RFC3339.string(from: date) == "2025-11-29T12:30:00Z")
        #expect(RFC3339.string(from: date, fractional: true) == "2025-11-29T12:30:00.250Z")
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: 0), fractional: true) == "1970-01-01T00:00:00.000Z")
        // Milliseconds are truncated, also before 1970.
        #expect(
            RFC3339.string(from: Date(timeIntervalSince1970: -0.0005), fractional: true) == "1969-12-31T23:59:59.999Z"
        )
        #expect(
            RFC3339.string(from: Date(timeIntervalSince1970: 59.9999), fractional: true) == "1970-01-01T00:00:59.999Z"
        )
    }

    @Test func parsesAnyOffset() {
        let date = Date(timeIntervalSince1970: 1_764_419_400.25)
        #expect(RFC3339.date(from: "2025-11-29T13:30:00+01:00") == Date(timeIntervalSince1970: 1_764_419_400))
        #expect(RFC3339.date(from: "2025-11-29T12:30:00.250Z") == date)
        #expect(RFC3339.date(from: "yesterday") == nil)
    }

    /// The digit-by-digit path agrees with Foundation's format style, from year 1600 to 9999
    /// (mid-millisecond instants, so that rounding of the binary fraction cannot differ).
    @Test func agreesWithFoundation() {
        var generator = SystemRandomNumberGenerator()
        let first = -11_676_096_000_000  // 1600-01-01T00:00:00Z, in milliseconds
        let last = 253_402_300_799_999  // 9999-12-31T23:59:59.999Z
        var milliseconds = [first, last, 0, -1, 951_782_400_000, 4_107_542_400_000]  // 2000-02-29, 2100-03-01
        for _ in 0..<2_000 { milliseconds.append(Int.random(in: first...last, using: &generator)) }
        for value in milliseconds {
            let date = Date(timeIntervalSince1970: (Double(value) + 0.5) / 1000)
            #expect(RFC3339.string(from: date, fractional: true) == Self.foundation(date, fractional: true), "\(value)")
            #expect(RFC3339.string(from: date) == Self.foundation(date, fractional: false), "\(value)")
        }
    }

    @Test func outsideYears1600To9999FallsBackToFoundation() {
        let dates = [
            Date.distantFuture, Date.distantPast, Date(timeIntervalSince1970: 253_402_300_800),
            Date(timeIntervalSince1970: -11_676_096_001),
        ]
        for date in dates {
            #expect(RFC3339.string(from: date) == Self.foundation(date, fractional: false))
        }
    }

    @Test func roundTrip() throws {
        let date = Date(timeIntervalSince1970: 1_795_955_400.125)
        let parsed = try #require(RFC3339.date(from: RFC3339.string(from: date, fractional: true)))
        #expect(abs(parsed.timeIntervalSince1970 - 1_795_955_400.125) < 0.0005)
    }
}
