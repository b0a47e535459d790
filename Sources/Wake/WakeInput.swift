import Audiences
import Devices
import Foundation
import HeraldCore
import Jobs

/// The field parsers the create and patch bodies share; each error names its field.
enum WakeInput {
    /// The reader of wake schedule bodies.
    typealias Reader = JSONObjectReader<WakeDomain>

    /// The members of `body`, one JSON object read with the one strict grammar.
    static func object(_ body: [UInt8], example: String) throws(WakeError) -> [String: JSONValue] {
        guard body.count <= WakeLimits.maximumBodyBytes else {
            throw WakeError(
                .tooLarge,
                code: "body_too_large",
                message: "the body is \(body.count) bytes: send at most \(WakeLimits.maximumBodyBytes)"
            )
        }
        return try Reader(body: body, maximumDepth: WakeLimits.maximumDepth, what: "a wake schedule", example: example)
            .members
    }

    static func string(_ value: JSONValue?, field: String, maximum: Int) throws(WakeError) -> String? {
        guard let value, value != .null else { return nil }
        guard case .string(let text) = value, !text.isEmpty, text.utf8.count <= maximum else {
            throw .invalid("invalid_\(field)", "\(field) must be a string of 1-\(maximum) bytes", field: field)
        }
        return text
    }

    static func name(_ value: JSONValue?, required: Bool) throws(WakeError) -> String? {
        guard let value, value != .null else {
            if required {
                throw .invalid(
                    "invalid_name",
                    "name is required: a label of 1-\(WakeLimits.maximumNameLength) characters",
                    field: "name"
                )
            }
            return nil
        }
        guard case .string(let text) = value, (1...WakeLimits.maximumNameLength).contains(text.count),
            !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw .invalid(
                "invalid_name",
                "name must be 1-\(WakeLimits.maximumNameLength) characters without control characters",
                field: "name"
            )
        }
        return text
    }

    static func bool(_ value: JSONValue?, field: String) throws(WakeError) -> Bool? {
        guard let value, value != .null else { return nil }
        guard case .bool(let flag) = value else {
            throw .invalid("invalid_\(field)", "\(field) must be true or false", field: field)
        }
        return flag
    }

    static func every(_ value: JSONValue) throws(WakeError) -> Int64 {
        guard case .string(let text) = value, let seconds = DurationText.seconds(text),
            seconds >= WakeLimits.minimumIntervalSeconds, seconds <= RecurrenceSchedule.maximumIntervalSeconds
        else {
            throw .invalid(
                "invalid_every",
                #"every must be a duration from 10s to 366d, such as "10m", "1h" or "1h30m""#,
                field: "every"
            )
        }
        return seconds
    }

    static func jitter(_ value: JSONValue?) throws(WakeError) -> Int64? {
        guard let value, value != .null else { return nil }
        guard case .string(let text) = value, let seconds = DurationText.seconds(text) else {
            throw .invalid(
                "invalid_jitter",
                #"jitter must be a duration such as "5m" (or "0s" for none)"#,
                field: "jitter"
            )
        }
        return seconds
    }

    /// The schedule `every` or `cron` (with `timezone`) give; `nil` when neither is there.
    static func schedule(
        every: JSONValue?,
        cron: JSONValue?,
        timezone: JSONValue?
    ) throws(WakeError) -> RecurrenceSchedule? {
        if every != nil, cron != nil {
            throw .invalid("invalid_schedule", #"give "every" or "cron", not both"#, field: "cron")
        }
        if let every {
            if timezone != nil {
                throw .invalid("invalid_timezone", "timezone goes with cron, not with every", field: "timezone")
            }
            return .interval(seconds: try Self.every(every))
        }
        guard let cron else { return nil }
        guard case .string(let expression) = cron, expression.utf8.count <= 200 else {
            throw .invalid("invalid_cron", #"cron must be a 5-field expression such as "0 * * * *""#, field: "cron")
        }
        let zone = try string(timezone, field: "timezone", maximum: 64)
        do {
            return try RecurrenceSchedule.cron(expression, timeZone: zone)
        } catch {
            let isZone = error.message.contains("time zone")
            throw .invalid(
                isZone ? "invalid_timezone" : "invalid_cron",
                isZone ? error.message : "cron: \(error.message)",
                field: isZone ? "timezone" : "cron"
            )
        }
    }

    /// The shortest gap between occurrences: the interval, or for cron the smallest of the next 48.
    static func shortestGap(_ schedule: RecurrenceSchedule, now: Date) -> Int64? {
        switch schedule {
        case .interval(let seconds):
            return seconds
        case .cron:
            var gap: TimeInterval?
            var previous = schedule.nextOccurrence(after: now)
            for _ in 0..<48 {
                guard let current = previous, let next = schedule.nextOccurrence(after: current) else { break }
                gap = min(gap ?? .infinity, next.timeIntervalSince(current))
                previous = next
            }
            return gap.map { Int64($0) }
        }
    }

    static func checkJitter(_ jitter: Int64, schedule: RecurrenceSchedule, now: Date) throws(WakeError) {
        guard jitter > 0 else { return }
        if let gap = shortestGap(schedule, now: now), jitter > gap {
            throw .invalid(
                "invalid_jitter",
                "jitter \(DurationText.text(jitter)) is longer than the schedule's interval \(DurationText.text(gap)): "
                    + "make it at most that, so that one run ends before the next",
                field: "jitter"
            )
        }
    }

    static func audience(_ value: JSONValue?) throws(WakeError) -> Audience {
        do {
            return try Audience.parse(value, field: "audience")
        } catch {
            throw WakeError(error)
        }
    }

    /// `data` as compact JSON text: an object of custom top-level keys, without `aps`.
    static func data(_ value: JSONValue?) throws(WakeError) -> String? {
        guard let value, value != .null else { return nil }
        guard case .object(let object) = value else {
            throw .invalid(
                "invalid_data",
                #"data must be a JSON object of custom keys, such as {"kind": "refresh"}"#,
                field: "data"
            )
        }
        if object["aps"] != nil {
            throw .invalid(
                "invalid_data",
                #"data must not contain "aps": Herald sends {"aps": {"content-available": 1}} itself"#,
                field: "data.aps"
            )
        }
        guard let encoded = try? value.jsonBytes() else {
            throw .invalid("invalid_data", "data could not be encoded as JSON", field: "data")
        }
        guard encoded.count <= WakeLimits.maximumDataBytes else {
            throw WakeError(
                .tooLarge,
                code: "data_too_large",
                message: "data is \(encoded.count) bytes as JSON: keep it at most \(WakeLimits.maximumDataBytes)",
                field: "data"
            )
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    static func cloudkit(_ value: JSONValue?) throws(WakeError) -> WakeCloudKitTarget {
        let example = #"{"container": "iCloud.com.example.app", "environment": "production"}"#
        guard case .object(let object)? = value else {
            throw .invalid("invalid_cloudkit", "cloudkit is required in cloudkit mode: \(example)", field: "cloudkit")
        }
        let known: Set<String> = ["container", "environment", "record_type", "field", "keep"]
        try Reader(members: object, path: "cloudkit", what: "cloudkit").rejectUnknown(known)
        guard case .string(let container)? = object["container"], !container.isEmpty,
            container.utf8.count <= WakeLimits.maximumCloudKitNameBytes,
            container.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") })
        else {
            throw .invalid(
                "invalid_container",
                "cloudkit.container must be the container id, such as iCloud.com.example.app",
                field: "cloudkit.container"
            )
        }
        guard case .string(let environmentName)? = object["environment"],
            let environment = WakeCloudKitEnvironment(rawValue: environmentName)
        else {
            throw .invalid(
                "invalid_environment",
                #"cloudkit.environment must be "production" or "development""#,
                field: "cloudkit.environment"
            )
        }
        var target = WakeCloudKitTarget(container: container, environment: environment)
        for (key, path) in [("record_type", \WakeCloudKitTarget.recordType), ("field", \.field)] {
            guard let value = object[key] else { continue }
            guard case .string(let text) = value, isCloudKitName(text) else {
                throw .invalid(
                    "invalid_\(key)",
                    "cloudkit.\(key) must start with a letter and hold only letters, digits and _ (at most "
                        + "\(WakeLimits.maximumCloudKitNameBytes))",
                    field: "cloudkit.\(key)"
                )
            }
            target[keyPath: path] = text
        }
        if let value = object["keep"] {
            guard let number = Reader.wholeNumber(value).flatMap({ Int(exactly: $0) }),
                WakeLimits.keepRange.contains(number)
            else {
                throw .invalid(
                    "invalid_keep",
                    "cloudkit.keep must be a whole number from \(WakeLimits.keepRange.lowerBound) to "
                        + "\(WakeLimits.keepRange.upperBound): the records kept after each run",
                    field: "cloudkit.keep"
                )
            }
            target.keep = number
        }
        return target
    }

    static func isCloudKitName(_ text: String) -> Bool {
        guard let first = text.utf8.first, text.utf8.count <= WakeLimits.maximumCloudKitNameBytes,
            (0x41...0x5A).contains(first) || (0x61...0x7A).contains(first)
        else { return false }
        return text.utf8.allSatisfy {
            (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x5F
        }
    }
}
