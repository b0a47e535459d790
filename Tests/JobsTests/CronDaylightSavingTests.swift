import Foundation
import Jobs
import JobsTestSupport
import Testing

/// The daylight-saving rules documented on `CronExpression`, on the 2026 changes: Europe/Berlin
/// springs forward on 03-29 (02:00 CET becomes 03:00 CEST) and falls back on 10-25 (03:00 CEST
/// becomes 02:00 CET); America/New_York on 03-08 (02:00 EST to 03:00 EDT) and 11-01 (02:00 EDT to
/// 01:00 EST).
@Suite("Cron expressions across daylight-saving changes")
struct CronDaylightSavingTests {
    let berlin = CronFixture.berlin
    let newYork = CronFixture.newYork

    // MARK: Fixed hours

    @Test func skippedTimeRunsOnceAtTheEndOfTheGapInBerlin() throws {
        #expect(
            try CronFixture.occurrences(of: "30 2 * * *", after: "2026-03-26T12:00:00Z", in: berlin, count: 5) == [
                "2026-03-27T02:30:00+01:00", "2026-03-28T02:30:00+01:00",
                "2026-03-29T03:00:00+02:00",  // 01:00 UTC, the first instant after the gap
                "2026-03-30T02:30:00+02:00", "2026-03-31T02:30:00+02:00",
            ]
        )
        #expect(
            CronFixture.date("2026-03-29T03:00:00+02:00") == CronFixture.date("2026-03-29T01:00:00Z")
        )
    }

    @Test func repeatedTimeRunsOnceAtItsFirstOccurrenceInBerlin() throws {
        #expect(
            try CronFixture.occurrences(of: "30 2 * * *", after: "2026-10-23T12:00:00Z", in: berlin, count: 4) == [
                "2026-10-24T02:30:00+02:00",
                "2026-10-25T02:30:00+02:00",  // 00:30 UTC; not again at 02:30 CET (01:30 UTC)
                "2026-10-26T02:30:00+01:00", "2026-10-27T02:30:00+01:00",
            ]
        )
    }

    @Test func repeatedTimeDoesNotRunWhenTheSearchStartsInsideTheRepeat() throws {
        // 01:40 UTC is 02:40 CET, the second pass through 02:00-03:00; 02:45 already ran as CEST.
        #expect(
            try CronFixture.next("45 2 * * *", after: "2026-10-25T01:40:00Z", in: berlin)
                == "2026-10-26T02:45:00+01:00"
        )
        #expect(
            try CronFixture.next("30 2 * * *", after: "2026-10-25T00:30:00Z", in: berlin)
                == "2026-10-26T02:30:00+01:00"
        )
    }

    @Test func severalSkippedTimesRunOnce() throws {
        #expect(
            try CronFixture.occurrences(of: "0,30 2 * * *", after: "2026-03-28T12:00:00Z", in: berlin, count: 3) == [
                "2026-03-29T03:00:00+02:00", "2026-03-30T02:00:00+02:00", "2026-03-30T02:30:00+02:00",
            ]
        )
        // Every minute of 02:00-02:59 also runs once, and 03:00 itself is not a second run.
        #expect(
            try CronFixture.occurrences(of: "* 2 * * *", after: "2026-03-29T00:30:00Z", in: berlin, count: 2) == [
                "2026-03-29T03:00:00+02:00", "2026-03-30T02:00:00+02:00",
            ]
        )
        #expect(
            try CronFixture.occurrences(of: "30 2,3 * * *", after: "2026-03-28T12:00:00Z", in: berlin, count: 3) == [
                "2026-03-29T03:00:00+02:00", "2026-03-29T03:30:00+02:00", "2026-03-30T02:30:00+02:00",
            ]
        )
    }

    @Test func timesNextToTheGapAreUntouched() throws {
        #expect(
            try CronFixture.occurrences(of: "0 3 * * *", after: "2026-03-28T12:00:00Z", in: berlin, count: 2) == [
                "2026-03-29T03:00:00+02:00", "2026-03-30T03:00:00+02:00",
            ]
        )
        #expect(
            try CronFixture.occurrences(of: "59 1 * * *", after: "2026-03-28T12:00:00Z", in: berlin, count: 2) == [
                "2026-03-29T01:59:00+01:00", "2026-03-30T01:59:00+02:00",
            ]
        )
    }

    @Test func skippedDayOfTheYearRunsAfterTheGap() throws {
        #expect(
            try CronFixture.occurrences(of: "30 2 29 3 *", after: "2026-01-01T00:00:00Z", in: berlin, count: 2) == [
                "2026-03-29T03:00:00+02:00", "2027-03-29T02:30:00+02:00",
            ]
        )
    }

    @Test func newYorkSpringForward() throws {
        #expect(
            try CronFixture.occurrences(of: "30 2 * * *", after: "2026-03-06T12:00:00Z", in: newYork, count: 3) == [
                "2026-03-07T02:30:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00",
            ]
        )
        // A morning job keeps its wall-clock time; the day in between is 23 hours long.
        #expect(
            try CronFixture.occurrences(of: "0 9 * * *", after: "2026-03-07T00:00:00Z", in: newYork, count: 3) == [
                "2026-03-07T09:00:00-05:00", "2026-03-08T09:00:00-04:00", "2026-03-09T09:00:00-04:00",
            ]
        )
    }

    @Test func newYorkFallBack() throws {
        #expect(
            try CronFixture.occurrences(of: "30 1 * * *", after: "2026-10-30T12:00:00Z", in: newYork, count: 3) == [
                "2026-10-31T01:30:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00",
            ]
        )
        // 06:30 UTC is 01:30 EST, inside the repeat: 01:45 already ran as EDT.
        #expect(
            try CronFixture.next("45 1 * * *", after: "2026-11-01T06:30:00Z", in: newYork)
                == "2026-11-02T01:45:00-05:00"
        )
    }

    // MARK: Wildcard hours

    @Test func quarterHourlyKeepsRealTimeThroughSpringForward() throws {
        let times = try CronFixture.occurrences(
            of: "*/15 * * * *",
            after: "2026-03-29T00:30:00Z",
            in: berlin,
            count: 3
        )
        #expect(times == ["2026-03-29T01:45:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-29T03:15:00+02:00"])
        #expect(gaps(times) == [900, 900])
    }

    @Test func quarterHourlyRunsInBothRepeatedHoursOfFallBack() throws {
        let times = try CronFixture.occurrences(
            of: "*/15 * * * *",
            after: "2026-10-25T00:30:00Z",
            in: berlin,
            count: 6
        )
        #expect(
            times == [
                "2026-10-25T02:45:00+02:00", "2026-10-25T02:00:00+01:00", "2026-10-25T02:15:00+01:00",
                "2026-10-25T02:30:00+01:00", "2026-10-25T02:45:00+01:00", "2026-10-25T03:00:00+01:00",
            ]
        )
        #expect(gaps(times) == [900, 900, 900, 900, 900])
    }

    @Test func hourlyAcrossBothBerlinChanges() throws {
        #expect(
            try CronFixture.occurrences(of: "@hourly", after: "2026-03-29T00:30:00Z", in: berlin, count: 2) == [
                "2026-03-29T03:00:00+02:00", "2026-03-29T04:00:00+02:00",
            ]
        )
        #expect(
            try CronFixture.occurrences(of: "0 * * * *", after: "2026-10-24T23:30:00Z", in: berlin, count: 3) == [
                "2026-10-25T02:00:00+02:00", "2026-10-25T02:00:00+01:00", "2026-10-25T03:00:00+01:00",
            ]
        )
    }

    @Test func wildcardHourDoesNotCatchUpSkippedMinutes() throws {
        // 02:05 does not exist; an hourly-at-:05 job next runs at 03:05, not also at 03:00.
        #expect(
            try CronFixture.occurrences(of: "5 * * * *", after: "2026-03-29T00:00:00Z", in: berlin, count: 2) == [
                "2026-03-29T01:05:00+01:00", "2026-03-29T03:05:00+02:00",
            ]
        )
    }

    @Test func newYorkHalfHourlyThroughFallBack() throws {
        let times = try CronFixture.occurrences(
            of: "*/30 * * * *",
            after: "2026-11-01T05:00:00Z",
            in: newYork,
            count: 5
        )
        #expect(
            times == [
                "2026-11-01T01:30:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T01:30:00-05:00",
                "2026-11-01T02:00:00-05:00", "2026-11-01T02:30:00-05:00",
            ]
        )
        #expect(gaps(times) == [1_800, 1_800, 1_800, 1_800])
        // Started inside the repeat (01:30 EST), a wildcard hour still runs the repeated :45.
        #expect(
            try CronFixture.next("45 * * * *", after: "2026-11-01T06:30:00Z", in: newYork)
                == "2026-11-01T01:45:00-05:00"
        )
    }

    // MARK: Other zones

    @Test func utcHasNoChanges() throws {
        #expect(
            try CronFixture.occurrences(of: "30 2 * * *", after: "2026-03-28T12:00:00Z", count: 2) == [
                "2026-03-29T02:30:00Z", "2026-03-30T02:30:00Z",
            ]
        )
        #expect(
            try CronFixture.occurrences(of: "30 1 * * *", after: "2026-10-31T12:00:00Z", count: 2) == [
                "2026-11-01T01:30:00Z", "2026-11-02T01:30:00Z",
            ]
        )
    }

    @Test func halfHourChangesOnLordHowe() throws {
        let lordHowe = try #require(TimeZone(identifier: "Australia/Lord_Howe"))
        // 2026-10-04 02:00 (+10:30) becomes 02:30 (+11:00).
        #expect(
            try CronFixture.next("15 2 * * *", after: "2026-10-03T12:00:00Z", in: lordHowe)
                == "2026-10-04T02:30:00+11:00"
        )
        // 2026-04-05 02:00 (+11:00) becomes 01:30 (+10:30).
        let times = try CronFixture.occurrences(
            of: "*/15 * * * *",
            after: "2026-04-04T14:30:00Z",
            in: lordHowe,
            count: 4
        )
        #expect(
            times == [
                "2026-04-05T01:45:00+11:00", "2026-04-05T01:30:00+10:30", "2026-04-05T01:45:00+10:30",
                "2026-04-05T02:00:00+10:30",
            ]
        )
    }

    /// Seconds between consecutive timestamps.
    private func gaps(_ times: [String]) -> [Int] {
        let dates = times.map(CronFixture.date)
        return zip(dates, dates.dropFirst()).map { Int($1.timeIntervalSince($0)) }
    }
}
