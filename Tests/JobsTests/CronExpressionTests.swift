import Foundation
import Jobs
import Testing

@Suite("Cron expressions: parsing and matching")
struct CronExpressionTests {
    // MARK: Parsing

    @Test func descriptionIsTheNormalizedText() throws {
        #expect(try CronExpression(parsing: "  0   9 *\t* MON-FRI ").description == "0 9 * * MON-FRI")
        #expect(try CronExpression(parsing: "@DAILY").description == "@daily")
        #expect(try CronExpression(parsing: "0 9 * * *") == CronExpression(parsing: "0  9 * * *"))
        #expect(try CronExpression(parsing: "0 9 * * *") != CronExpression(parsing: "0 10 * * *"))
    }

    @Test func longestAcceptedExpressionParses() throws {
        // 200 characters exactly: a long minute list padded with spaces.
        let fields = " 0 * * *"
        let minutes = (0..<60).map(String.init).joined(separator: ",")
        let padding = String(repeating: " ", count: CronExpression.maximumLength - minutes.count - fields.count)
        let text = minutes + padding + fields
        #expect(text.count == 200)
        let cron = try CronExpression(parsing: text)
        #expect(
            cron.nextOccurrence(after: CronFixture.date("2026-01-01T00:00:00Z"), in: CronFixture.utc)
                == CronFixture.date("2026-01-01T00:01:00Z")
        )
    }

    static let invalid: [(text: String, message: String)] = [
        (
            "",
            "cron expression is empty; "
                + "expected 5 fields (minute hour day-of-month month day-of-week) or a macro such as @daily"
        ),
        (
            " \t ",
            "cron expression is empty; "
                + "expected 5 fields (minute hour day-of-month month day-of-week) or a macro such as @daily"
        ),
        (
            "* * * *",
            "cron expression \"* * * *\" has 4 fields; "
                + "expected 5 (minute hour day-of-month month day-of-week) or a macro such as @daily"
        ),
        (
            "0 0 * * * 2026",
            "cron expression \"0 0 * * * 2026\" has 6 fields; "
                + "expected 5 (minute hour day-of-month month day-of-week) or a macro such as @daily"
        ),
        (String(repeating: "*", count: 201), "cron expression is 201 characters long; the limit is 200"),
        (
            "@reboot",
            "cron macro \"@reboot\" is not supported; "
                + "use @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly"
        ),
        ("@daily 0", "cron macro \"@daily\" must stand alone, without other fields"),
        ("60 * * * *", "cron field 1 (minute) \"60\": value 60 is outside 0-59"),
        ("0 25 * * *", "cron field 2 (hour) \"25\": value 25 is outside 0-23"),
        ("0 0 0 * *", "cron field 3 (day-of-month) \"0\": value 0 is outside 1-31"),
        ("0 0 32 * *", "cron field 3 (day-of-month) \"32\": value 32 is outside 1-31"),
        ("0 0 * 13 *", "cron field 4 (month) \"13\": value 13 is outside 1-12"),
        ("0 0 * JAN-13 *", "cron field 4 (month) \"JAN-13\": value 13 is outside 1-12"),
        ("0 0 * * 8", "cron field 5 (day-of-week) \"8\": value 8 is outside 0-7"),
        (
            "99999999999999999999 * * * *",
            "cron field 1 (minute) \"99999999999999999999\": "
                + "value 99999999999999999999 is outside 0-59"
        ),
        ("0 0 * FOO *", "cron field 4 (month) \"FOO\": \"FOO\" is not a month number 1-12 or name JAN-DEC"),
        ("0 0 * * FUN", "cron field 5 (day-of-week) \"FUN\": \"FUN\" is not a weekday number 0-7 or name SUN-SAT"),
        ("0 0 * * JAN", "cron field 5 (day-of-week) \"JAN\": \"JAN\" is not a weekday number 0-7 or name SUN-SAT"),
        ("0 0 MON * *", "cron field 3 (day-of-month) \"MON\": \"MON\" is not a number in 1-31"),
        ("? * * * *", "cron field 1 (minute) \"?\": \"?\" is not a number in 0-59"),
        ("+5 * * * *", "cron field 1 (minute) \"+5\": \"+5\" is not a number in 0-59"),
        ("5-1 * * * *", "cron field 1 (minute) \"5-1\": range 5-1 runs backwards; write it low-high within 0-59"),
        (
            "0 0 * * FRI-MON",
            "cron field 5 (day-of-week) \"FRI-MON\": range FRI-MON runs backwards; "
                + "write it low-high within 0-7"
        ),
        ("1- * * * *", "cron field 1 (minute) \"1-\": a value is missing in \"1-\"; allowed values are 0-59"),
        ("-5 * * * *", "cron field 1 (minute) \"-5\": a value is missing in \"-5\"; allowed values are 0-59"),
        ("1-2-3 * * * *", "cron field 1 (minute) \"1-2-3\": \"1-2-3\" is neither a value nor a range a-b"),
        ("1,,2 * * * *", "cron field 1 (minute) \"1,,2\": a list item is empty; allowed values are 0-59"),
        ("1/2/3 * * * *", "cron field 1 (minute) \"1/2/3\": \"1/2/3\" has more than one \"/\""),
        ("*/0 * * * *", "cron field 1 (minute) \"*/0\": step 0 is outside 1-59"),
        ("*/60 * * * *", "cron field 1 (minute) \"*/60\": step 60 is outside 1-59"),
        ("0 */x * * *", "cron field 2 (hour) \"*/x\": step \"x\" is not a number in 1-23"),
        ("0 */ * * *", "cron field 2 (hour) \"*/\": step \"\" is not a number in 1-23"),
        ("0 0 * */13 *", "cron field 4 (month) \"*/13\": step 13 is outside 1-12"),
    ]

    @Test(arguments: invalid)
    func invalidExpressionSaysWhatIsWrong(text: String, message: String) {
        #expect(throws: ScheduleError(message: message)) {
            try CronExpression(parsing: text)
        }
    }

    @Test func errorDescriptionIsItsMessage() {
        let error = ScheduleError(message: "cron field 2 (hour) \"25\": value 25 is outside 0-23")
        #expect(error.description == error.message)
    }

    // MARK: Field syntax

    @Test func stepsFromStar() throws {
        #expect(
            try CronFixture.occurrences(of: "*/20 * * * *", after: "2026-01-01T00:00:00Z", count: 4) == [
                "2026-01-01T00:20:00Z", "2026-01-01T00:40:00Z", "2026-01-01T01:00:00Z", "2026-01-01T01:20:00Z",
            ]
        )
    }

    @Test func stepsInARangeAndFromAStart() throws {
        #expect(
            try CronFixture.occurrences(of: "10-50/20 * * * *", after: "2026-01-01T00:00:00Z", count: 4) == [
                "2026-01-01T00:10:00Z", "2026-01-01T00:30:00Z", "2026-01-01T00:50:00Z", "2026-01-01T01:10:00Z",
            ]
        )
        #expect(
            try CronFixture.occurrences(of: "5/20 * * * *", after: "2026-01-01T00:00:00Z", count: 4) == [
                "2026-01-01T00:05:00Z", "2026-01-01T00:25:00Z", "2026-01-01T00:45:00Z", "2026-01-01T01:05:00Z",
            ]
        )
        #expect(
            try CronFixture.occurrences(of: "0 9-17/4 * * *", after: "2026-01-01T00:00:00Z", count: 4) == [
                "2026-01-01T09:00:00Z", "2026-01-01T13:00:00Z", "2026-01-01T17:00:00Z", "2026-01-02T09:00:00Z",
            ]
        )
    }

    @Test func listsMixValuesRangesAndSteps() throws {
        #expect(
            try CronFixture.occurrences(of: "15,45 8,20-21 * * *", after: "2026-01-01T00:00:00Z", count: 7) == [
                "2026-01-01T08:15:00Z", "2026-01-01T08:45:00Z", "2026-01-01T20:15:00Z", "2026-01-01T20:45:00Z",
                "2026-01-01T21:15:00Z", "2026-01-01T21:45:00Z", "2026-01-02T08:15:00Z",
            ]
        )
        #expect(
            try CronFixture.occurrences(of: "0,*/25,59 0 1 1 *", after: "2025-12-31T00:00:00Z", count: 5) == [
                "2026-01-01T00:00:00Z", "2026-01-01T00:25:00Z", "2026-01-01T00:50:00Z", "2026-01-01T00:59:00Z",
                "2027-01-01T00:00:00Z",
            ]
        )
    }

    @Test func monthNamesAreCaseInsensitive() throws {
        #expect(
            try CronFixture.occurrences(of: "0 0 1 jan,Jul *", after: "2026-01-01T00:00:00Z", count: 2) == [
                "2026-07-01T00:00:00Z", "2027-01-01T00:00:00Z",
            ]
        )
        #expect(
            try CronFixture.occurrences(of: "0 0 1 jan-Dec/5 *", after: "2026-01-01T00:00:00Z", count: 3) == [
                "2026-06-01T00:00:00Z", "2026-11-01T00:00:00Z", "2027-01-01T00:00:00Z",
            ]
        )
    }

    @Test func weekdayNamesAndRanges() throws {
        // 2026-01-01 is a Thursday.
        #expect(
            try CronFixture.occurrences(of: "0 12 * * mon-FRI", after: "2026-01-01T12:00:00Z", count: 4) == [
                "2026-01-02T12:00:00Z", "2026-01-05T12:00:00Z", "2026-01-06T12:00:00Z", "2026-01-07T12:00:00Z",
            ]
        )
        #expect(
            try CronFixture.occurrences(of: "0 0 * * 5-7", after: "2026-01-01T00:00:00Z", count: 4) == [
                "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "2026-01-09T00:00:00Z",
            ]
        )
    }

    @Test(arguments: ["0 0 * * 0", "0 0 * * 7", "0 0 * * sun", "0 0 * * SUN", "@weekly", "0 0 * * 0/7"])
    func sundayIsZeroSevenOrSun(expression: String) throws {
        #expect(
            try CronFixture.occurrences(of: expression, after: "2026-01-01T00:00:00Z", count: 3) == [
                "2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z", "2026-01-18T00:00:00Z",
            ]
        )
    }

    static let macros: [(macro: String, first: String, second: String)] = [
        ("@yearly", "2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"),
        ("@annually", "2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"),
        ("@monthly", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"),
        ("@weekly", "2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z"),
        ("@daily", "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"),
        ("@midnight", "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"),
        ("@hourly", "2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z"),
        ("@Hourly", "2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z"),
    ]

    @Test(arguments: macros)
    func macrosStandForTheirFields(macro: String, first: String, second: String) throws {
        #expect(
            try CronFixture.occurrences(of: macro, after: "2026-01-01T00:00:00Z", count: 2) == [first, second]
        )
    }

    // MARK: Days

    @Test func restrictedDayOfMonthAndDayOfWeekMatchEither() throws {
        // The 10th or any Wednesday: 2026-06-10 is both, 2026-07-10 is a Friday.
        #expect(
            try CronFixture.occurrences(of: "0 0 10 * WED", after: "2026-06-01T00:00:00Z", count: 7) == [
                "2026-06-03T00:00:00Z", "2026-06-10T00:00:00Z", "2026-06-17T00:00:00Z", "2026-06-24T00:00:00Z",
                "2026-07-01T00:00:00Z", "2026-07-08T00:00:00Z", "2026-07-10T00:00:00Z",
            ]
        )
        #expect(
            try CronFixture.occurrences(of: "0 0 1 * MON", after: "2026-05-31T00:00:00Z", count: 7) == [
                "2026-06-01T00:00:00Z", "2026-06-08T00:00:00Z", "2026-06-15T00:00:00Z", "2026-06-22T00:00:00Z",
                "2026-06-29T00:00:00Z", "2026-07-01T00:00:00Z", "2026-07-06T00:00:00Z",
            ]
        )
    }

    @Test func starDayFieldLeavesOnlyTheOther() throws {
        #expect(
            try CronFixture.occurrences(of: "0 0 * * WED", after: "2026-06-01T00:00:00Z", count: 3) == [
                "2026-06-03T00:00:00Z", "2026-06-10T00:00:00Z", "2026-06-17T00:00:00Z",
            ]
        )
        #expect(
            try CronFixture.occurrences(of: "0 0 10 * *", after: "2026-06-01T00:00:00Z", count: 3) == [
                "2026-06-10T00:00:00Z", "2026-07-10T00:00:00Z", "2026-08-10T00:00:00Z",
            ]
        )
    }

    @Test func starStepDayOfMonthNeedsBothFieldsLikeVixie() throws {
        // `*/2` starts with `*`, so Vixie cron wants both: Mondays on an odd day of the month.
        #expect(
            try CronFixture.occurrences(of: "0 0 */2 * MON", after: "2026-05-31T00:00:00Z", count: 4) == [
                "2026-06-01T00:00:00Z", "2026-06-15T00:00:00Z", "2026-06-29T00:00:00Z", "2026-07-13T00:00:00Z",
            ]
        )
    }

    @Test func monthEndsSkipShortMonths() throws {
        #expect(
            try CronFixture.occurrences(of: "0 0 31 * *", after: "2026-01-31T00:00:00Z", count: 4) == [
                "2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z", "2026-07-31T00:00:00Z", "2026-08-31T00:00:00Z",
            ]
        )
        #expect(
            try CronFixture.occurrences(of: "0 0 30 * *", after: "2026-01-30T00:00:00Z", count: 2) == [
                "2026-03-30T00:00:00Z", "2026-04-30T00:00:00Z",
            ]
        )
        #expect(
            try CronFixture.occurrences(of: "59 23 31 12 *", after: "2026-12-31T23:59:00Z", count: 1) == [
                "2027-12-31T23:59:00Z"
            ]
        )
    }

    @Test func leapDayComesEveryFourYearsAndSkipsCenturies() throws {
        #expect(
            try CronFixture.occurrences(of: "0 0 29 2 *", after: "2026-01-01T00:00:00Z", count: 3) == [
                "2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z", "2036-02-29T00:00:00Z",
            ]
        )
        // 2100 is not a leap year: eight years from 2096 to 2104.
        #expect(try CronFixture.next("0 0 29 2 *", after: "2096-03-01T00:00:00Z") == "2104-02-29T00:00:00Z")
    }

    @Test(arguments: ["0 0 30 2 *", "0 0 31 4 *", "0 0 31 2,4,6,9,11 *", "0 0 30,31 FEB *"])
    func impossibleExpressionHasNoNextOccurrence(expression: String) throws {
        #expect(try CronFixture.next(expression, after: "2026-01-01T00:00:00Z") == nil)
        #expect(try CronFixture.next(expression, after: "2026-01-01T00:00:00Z", in: CronFixture.berlin) == nil)
    }

    @Test func impossibleDayOfMonthStillRunsOnTheWeekday() throws {
        // April has no 31st, but the day-of-week field still matches (either rule).
        #expect(try CronFixture.next("0 0 31 4 MON", after: "2026-01-01T00:00:00Z") == "2026-04-06T00:00:00Z")
    }

    // MARK: Strictly after

    @Test func occurrenceAtTheDateIsNotReturned() throws {
        #expect(try CronFixture.next("0 9 * * *", after: "2026-01-01T09:00:00Z") == "2026-01-02T09:00:00Z")
        #expect(try CronFixture.next("0 9 * * *", after: "2026-01-01T09:00:00.500Z") == "2026-01-02T09:00:00Z")
        #expect(try CronFixture.next("0 9 * * *", after: "2026-01-01T08:59:59.999Z") == "2026-01-01T09:00:00Z")
        #expect(try CronFixture.next("* * * * *", after: "2026-01-01T08:59:30Z") == "2026-01-01T09:00:00Z")
        #expect(try CronFixture.next("* * * * *", after: "2026-01-01T09:00:00Z") == "2026-01-01T09:01:00Z")
    }

    @Test func datesBefore1970() throws {
        #expect(try CronFixture.next("* * * * *", after: "1969-12-31T23:59:30Z") == "1970-01-01T00:00:00Z")
        #expect(try CronFixture.next("0 0 29 2 *", after: "1901-01-01T00:00:00Z") == "1904-02-29T00:00:00Z")
    }
}
