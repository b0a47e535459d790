public import Foundation

extension CronExpression {
    /// The first minute strictly after `date` that the expression matches on the wall clock of
    /// `timeZone`, with the daylight-saving rules described on ``CronExpression``.
    ///
    /// Skips whole months, days and hours that cannot match, so each call costs a few steps per
    /// matching day rather than one per minute.
    ///
    /// - Parameters:
    ///   - date: The instant to search after; an occurrence equal to it is not returned.
    ///   - timeZone: Whose wall clock the fields are read on.
    /// - Returns: The occurrence (whole seconds, at second 0 of a wall-clock minute), or `nil` when
    ///   nothing matches in the next 9 years, as for `0 0 30 2 *`.
    public func nextOccurrence(after date: Date, in timeZone: TimeZone) -> Date? {
        let seconds = date.timeIntervalSince1970
        // Far beyond any schedule (about ±3 million years), and never NaN: no occurrence.
        guard seconds.magnitude < 1e14 else { return nil }
        let after = Int(seconds.rounded(.down))
        let horizon = after + Self.searchHorizonSeconds

        // The timeline is cut into spans of one UTC offset at each transition. Inside a span a
        // wall time maps to exactly one instant, so the first matching wall time is the answer.
        // Start a day early so that a fall-back just before `date` is seen: the wall times it
        // repeats must not run again (fixed hours).
        var spanStart = after - 86_400
        var offset = timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(spanStart)))
        // The earliest wall time the current span may run (later than its start after a fall-back).
        var firstWall = spanStart + offset
        while spanStart <= horizon {
            let transition = timeZone.nextDaylightSavingTimeTransition(
                after: Date(timeIntervalSince1970: Double(spanStart))
            )
            let transitionSecond = transition.map { Int($0.timeIntervalSince1970.rounded(.up)) }
            let spanEnd = min(max(transitionSecond ?? horizon + 1, spanStart + 1), horizon + 1)
            if spanEnd > after {
                // Wall times strictly after `date` (in this span's offset) and not before `firstWall`.
                let low = max(ceilToMinute(firstWall), floorDivide(after + offset, 60) * 60 + 60)
                if let wall = nextMatchingWall(atOrAfter: low, before: spanEnd + offset) {
                    return Date(timeIntervalSince1970: Double(wall - offset))
                }
            }
            guard transitionSecond != nil, spanEnd <= horizon else { return nil }
            let newOffset = timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(spanEnd)))
            if !hourIsWildcard {
                // Spring forward: a fixed time in the skipped wall times runs at the end of the gap.
                if newOffset > offset, spanEnd > after,
                    nextMatchingWall(atOrAfter: ceilToMinute(spanEnd + offset), before: spanEnd + newOffset) != nil
                {
                    return Date(timeIntervalSince1970: Double(spanEnd))
                }
                // Fall back: the repeated wall times already ran in the previous span.
                firstWall = spanEnd + max(offset, newOffset)
            } else {
                firstWall = spanEnd + newOffset
            }
            spanStart = spanEnd
            offset = newOffset
        }
        return nil
    }

    /// The first wall time (seconds since 1970-01-01T00:00 on the wall clock, a whole minute) at or
    /// after `low` and before `limit` whose fields match, skipping months, days and hours that
    /// cannot.
    func nextMatchingWall(atOrAfter low: Int, before limit: Int) -> Int? {
        var day = floorDivide(low, 86_400)
        var date = CivilDate(daysSince1970: day)
        let minuteOfDay = (low - day * 86_400) / 60
        var hour = minuteOfDay / 60
        var minute = minuteOfDay % 60
        while day * 86_400 + hour * 3_600 + minute * 60 < limit {
            if months & (1 << UInt64(date.month)) == 0 {
                if let month = nextBit(in: months, from: date.month + 1) {
                    date = CivilDate(year: date.year, month: month, day: 1)
                } else {
                    date = CivilDate(year: date.year + 1, month: months.trailingZeroBitCount, day: 1)
                }
                day = date.daysSince1970
                hour = 0
                minute = 0
            } else if !dayMatches(date, weekday: weekday(daysSince1970: day)) {
                day += 1
                date = CivilDate(daysSince1970: day)
                hour = 0
                minute = 0
            } else if hours & (1 << UInt64(hour)) == 0 {
                if let next = nextBit(in: hours, from: hour + 1) {
                    hour = next
                } else {
                    day += 1
                    date = CivilDate(daysSince1970: day)
                    hour = 0
                }
                minute = 0
            } else if minutes & (1 << UInt64(minute)) == 0 {
                if let next = nextBit(in: minutes, from: minute + 1) {
                    minute = next
                } else if hour < 23 {
                    hour += 1
                    minute = 0
                } else {
                    day += 1
                    date = CivilDate(daysSince1970: day)
                    hour = 0
                    minute = 0
                }
            } else {
                return day * 86_400 + hour * 3_600 + minute * 60
            }
        }
        return nil
    }

    /// Vixie's rule: either day field when both are restricted, otherwise both.
    private func dayMatches(_ date: CivilDate, weekday: Int) -> Bool {
        let dayOfMonthMatches = daysOfMonth & (1 << UInt64(date.day)) != 0
        let dayOfWeekMatches = daysOfWeek & (1 << UInt64(weekday)) != 0
        if dayOfMonthIsWildcard || dayOfWeekIsWildcard {
            return dayOfMonthMatches && dayOfWeekMatches
        }
        return dayOfMonthMatches || dayOfWeekMatches
    }
}

/// A proleptic Gregorian date with no time zone: the wall-clock day a cron field is matched on.
struct CivilDate: Sendable, Hashable {
    var year: Int
    var month: Int
    var day: Int

    init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// Howard Hinnant's `civil_from_days`.
    init(daysSince1970: Int) {
        let shifted = daysSince1970 + 719_468
        let era = floorDivide(shifted, 146_097)
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let marchMonth = (5 * dayOfYear + 2) / 153
        day = dayOfYear - (153 * marchMonth + 2) / 5 + 1
        month = marchMonth < 10 ? marchMonth + 3 : marchMonth - 9
        year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    }

    /// Howard Hinnant's `days_from_civil`.
    var daysSince1970: Int {
        let marchYear = month <= 2 ? year - 1 : year
        let era = floorDivide(marchYear, 400)
        let yearOfEra = marchYear - era * 400
        let dayOfYear = (153 * ((month + 9) % 12) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

/// 0 is Sunday; 1970-01-01 was a Thursday.
private func weekday(daysSince1970: Int) -> Int {
    let remainder = (daysSince1970 + 4) % 7
    return remainder < 0 ? remainder + 7 : remainder
}

/// The lowest set bit at or above `from`, if any.
private func nextBit(in bits: UInt64, from: Int) -> Int? {
    guard from < 64 else { return nil }
    let above = bits & (~UInt64(0) << UInt64(from))
    return above == 0 ? nil : above.trailingZeroBitCount
}

private func floorDivide(_ value: Int, _ divisor: Int) -> Int {
    let quotient = value / divisor
    return value % divisor < 0 ? quotient - 1 : quotient
}

private func ceilToMinute(_ seconds: Int) -> Int {
    -floorDivide(-seconds, 60) * 60
}
