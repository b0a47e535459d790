import APNs
import APNsTransport
import Audiences
import Devices
import Foundation
import HeraldCore
import Jobs
import Notifications
import Storage

// APNs mode: a background push to every active device of the audience, read a page at a time,
// each device at most once per minimum interval across every schedule.
extension WakeRunner {
    /// What one device's push came to.
    func sendAPNs(_ schedule: WakeSchedule, run: inout WakeRun) async throws -> JobOutcome {
        guard let target = schedule.apns, let clients,
            let app = clients.apps.first(where: { $0.bundleID == target.app && $0.serves(target.environment) })
        else {
            run.status = .failed
            run.error = "\(schedule.apns?.app ?? "the app") is not configured on this server"
            return .failed(reason: run.error ?? "")
        }
        let client = try clients.client(for: app, environment: target.environment)
        let payload = Array(Self.payload(data: target.data).utf8)
        let template = APNSRequest(
            deviceToken: "",
            pushType: .background,
            topic: .explicit(app.bundleID),
            payload: payload,
            priority: .consideringDevicePower
        )
        run.devices = 0
        run.sent = 0
        run.skipped = 0
        run.failed = 0
        let start = clock.now()
        // Jitter spreads the sends evenly over the window: device i of n leaves at start + window × i / n.
        let total = schedule.jitterSeconds > 0 ? try await count(target) : 0
        let window = TimeInterval(schedule.jitterSeconds)
        var dead: [DeviceInvalidation] = []
        var counts = (sent: 0, failed: 0)
        let labels: MetricLabels = [("mode", "apns")]
        // The audience a page at a time: each page's devices claimed (those pinged within the
        // minimum interval skipped), then handed out one by one at their jitter slot.
        var cursor: AudienceCursor?
        var offset = 0
        var pageRead = false
        var claimed: [(position: Int, token: String)] = []
        var handedOut = 0
        var pageStart = 0
        func next() async throws -> APNSRequest? {
            while handedOut == claimed.count {
                guard !pageRead || cursor != nil else { return nil }
                let page = try await self.page(target, after: cursor, offset: offset)
                pageRead = true
                cursor = page.next
                offset += page.read
                pageStart = run.devices
                run.devices += page.tokens.count
                let now = clock.now()
                let taken = try await store.claimPings(
                    app: target.app,
                    environment: target.environment.rawValue,
                    tokens: page.tokens,
                    now: now,
                    cutoff: now.addingTimeInterval(-minimumInterval)
                )
                run.skipped += page.tokens.count - taken.count
                claimed = page.tokens.enumerated().filter { taken.contains($0.element) }.map { ($0.offset, $0.element) }
                handedOut = 0
            }
            let (position, token) = claimed[handedOut]
            handedOut += 1
            if total > 0 {
                let due = start.addingTimeInterval(window * Double(pageStart + position) / Double(total))
                if due > clock.now() { try await clock.sleep(until: due) }
            }
            var request = template
            request.deviceToken = token
            request.id = APNSIdentifier.next()
            return request
        }
        // One payload for every device: checked once, not per push.
        let scope = APNSRequest.ValidationScope(copiesOf: template)
        try await APNSFanOut(maximumInFlight: maximumInFlight, clock: clock).run(
            next: next,
            send: { try await client.send($0, checking: scope) }
        ) { request, answer in
            switch answer.outcome {
            case .sent: counts.sent += 1
            case .dead(let rejection, let since):
                counts.failed += 1
                dead.append(
                    DeviceInvalidation(
                        token: request.deviceToken,
                        reason: rejection.reason.rawValue,
                        invalidAt: since,
                        recordedAt: clock.now()
                    )
                )
                if dead.count >= 500 {
                    try await invalidate(dead, target: target)
                    dead = []
                }
            case .retry, .rejected, .cancelled: counts.failed += 1
            }
        }
        if !dead.isEmpty { try await invalidate(dead, target: target) }
        run.sent = counts.sent
        run.failed = counts.failed
        run.status = .done
        run.error = counts.failed > 0 ? "\(counts.failed) device(s) failed" : nil
        metrics.pings.increment(by: Double(counts.sent), labels: labels + [("result", "sent")])
        metrics.pings.increment(by: Double(run.skipped), labels: labels + [("result", "skipped")])
        metrics.pings.increment(by: Double(counts.failed - dead.count), labels: labels + [("result", "failed")])
        logger.debug(
            "wake run sent",
            metadata: [
                "schedule": .string("\(schedule.id)"), "devices": .int(run.devices), "sent": .int(run.sent),
                "skipped": .int(run.skipped), "failed": .int(run.failed),
            ]
        )
        return .done
    }

    /// `{"aps":{"content-available":1}}` with `data`'s keys beside `aps`.
    static func payload(data: String) -> String {
        let aps = #"{"aps":{"content-available":1}"#
        let inner = data.drop { $0 == " " }.dropFirst().drop { $0 == " " }
        guard inner.first != "}" else { return aps + "}" }
        return aps + "," + inner
    }

    /// One page of the audience: the registry's active devices, or a slice of a token list.
    private func page(
        _ target: WakeAPNsTarget,
        after cursor: AudienceCursor?,
        offset: Int
    ) async throws -> (tokens: [String], next: AudienceCursor?, read: Int) {
        guard let selector = target.audience.selector else {
            guard case .tokens(let tokens) = target.audience, offset < tokens.count else { return ([], nil, 0) }
            let end = min(offset + pageSize, tokens.count)
            let slice = Array(tokens[offset..<end])
            let next = end < tokens.count ? AudienceCursor(text: slice[slice.count - 1]) : nil
            // Tokens APNs called dead stay out, as they do from the registry's audiences.
            let invalid = try await devices.invalidTokens(
                app: target.app,
                environment: target.environment,
                among: slice
            )
            return (invalid.isEmpty ? slice : slice.filter { !invalid.contains($0) }, next, slice.count)
        }
        let page = try await devices.activeTokens(
            app: target.app,
            environment: target.environment,
            selector: selector,
            after: cursor,
            limit: pageSize
        )
        return (page.tokens, page.next, page.tokens.count)
    }

    /// The audience's size, counted a page at a time (for the jitter's spacing).
    private func count(_ target: WakeAPNsTarget) async throws -> Int {
        var total = 0
        var offset = 0
        var cursor: AudienceCursor?
        repeat {
            let page = try await self.page(target, after: cursor, offset: offset)
            offset += page.read
            total += page.tokens.count
            cursor = page.next
        } while cursor != nil
        return total
    }

    /// Marks the dead tokens' devices invalid, as the notification sender's result write does.
    private func invalidate(_ dead: [DeviceInvalidation], target: WakeAPNsTarget) async throws {
        let devices = self.devices
        try await store.database.transaction { tx in
            _ = try await devices.invalidate(dead, app: target.app, environment: target.environment, on: tx)
        }
        metrics.pings.increment(by: Double(dead.count), labels: [("mode", "apns"), ("result", "dead")])
    }
}
