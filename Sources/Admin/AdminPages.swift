import Foundation
import HTTPRouting
import HeraldCore
import Jobs

extension AdminConsole {
    // MARK: Notifications

    func notifications(_ context: Context) async -> AdminPage {
        await listPage(
            context,
            title: "Notifications",
            apiPath: "/v1/notifications",
            itemsKey: "notifications",
            filters: [
                AdminFilter(
                    name: "status",
                    label: "Status",
                    choices: ["scheduled", "sending", "done", "cancelled", "failed"]
                ),
                AdminFilter(name: "app", label: "App", placeholder: "com.example.app"),
                AdminFilter(name: "created_after", label: "Created after", placeholder: "2026-12-01T00:00:00Z"),
                AdminFilter(name: "created_before", label: "Created before", placeholder: "2026-12-31T00:00:00Z"),
            ],
            columns: [
                .link("Id", "id", to: "/admin/notifications"), .badge("Status", "status"), .field("App", "app"),
                .field("Environment", "environment"), .field("Push type", "push_type"),
                .field("Audience", "audience_kind"), .field("Tokens", "tokens"), .field("Send at", "send_at"),
                .field("Created", "created_at"),
            ],
            empty: "No notification matches.",
            tableID: "notifications"
        )
    }

    func notification(_ context: Context, id: String) async -> AdminPage {
        var query: [(name: String, value: String)] = [("limit", Self.pageSize)]
        if let cursor = context.request.queryValue("cursor"), !cursor.isEmpty { query.append(("cursor", cursor)) }
        let json: JSONValue
        do {
            json = try await read(
                "/v1/notifications/" + AdminForm.encode(id),
                query: query,
                context,
                title: "Notification"
            )
        } catch {
            return error.page
        }
        var html = HTML()
        details(
            json,
            [
                ("Id", "id"), ("Status", "status"), ("App", "app"), ("Environment", "environment"),
                ("Push type", "push_type"), ("Topic", "topic"), ("Audience", "audience_kind"), ("Tokens", "tokens"),
                ("Send at", "send_at"), ("Created", "created_at"), ("Updated", "updated_at"),
                ("Failure", "failure_reason"),
            ],
            into: &html
        )
        if json["status"]?.stringValue == "scheduled" {
            button(
                "Cancel this notification",
                action: "/admin/notifications/\(AdminForm.encode(id))/cancel",
                context: context,
                confirm: "Cancel this notification? It will not be sent.",
                into: &html
            )
        }
        if let audience = json["audience"], audience != .null {
            html.element("h2", "Audience")
            html.element("pre", audience.compactText)
        }
        html.element("h2", "Counts")
        let counts = json["counts"]?.objectValue ?? [:]
        html.table(
            ["Result", "Tokens"],
            rows: counts.keys.sorted().map { [HTML.badge($0), HTML.cell(counts[$0]?.display)] },
            empty: "Nothing counted yet.",
            id: "counts"
        )
        html.element("h2", "Results")
        let results = json["results"]?.arrayValue ?? []
        html.table(
            ["Token", "Result", "Reason", "APNs id", "Attempts", "Invalid at", "Updated"],
            rows: results.map { result in
                [
                    HTML.cell(result["token"]?.display), result["status"]?.display.map(HTML.badge) ?? HTML.cell(nil),
                    HTML.cell(result["reason"]?.display), HTML.cell(result["apns_id"]?.display),
                    HTML.cell(result["attempts"]?.display), HTML.cell(result["invalid_at"]?.display),
                    HTML.cell(result["updated_at"]?.display),
                ]
            },
            empty: "No result yet: the notification has not been sent.",
            id: "results"
        )
        nextPageLink(json["next_cursor"]?.stringValue, path: context.path, query: [], into: &html)
        return AdminPage(title: "Notification", content: html.markup)
    }

    func cancelNotification(_ context: Context, id: String) async -> AdminOutcome {
        let answer = await api.call(
            "DELETE",
            "/v1/notifications/" + AdminForm.encode(id),
            requestID: context.request.requestID
        )
        let notice = answer.isSuccess ? "Notification cancelled." : "Not cancelled: \(answer.errorMessage)"
        return .redirect("/admin/notifications/" + AdminForm.encode(id), notice: notice)
    }

    // MARK: Live Activities

    func liveActivities(_ context: Context) async -> AdminPage {
        await listPage(
            context,
            title: "Live Activities",
            apiPath: "/v1/live-activities",
            itemsKey: "live_activities",
            filters: [
                AdminFilter(
                    name: "state",
                    label: "State",
                    choices: ["scheduled", "starting", "started", "ended", "failed", "cancelled"]
                ),
                AdminFilter(name: "user_id", label: "User"),
                AdminFilter(name: "attributes_type", label: "Attributes type"),
            ],
            columns: [
                .link("Id", "id", to: "/admin/live-activities"), .badge("State", "state"),
                .field("Attributes type", "attributes_type"), .field("App", "app"), .field("Users", "users"),
                .field("Start", "start"), .field("Channel", "channel_id"), .field("Created", "created_at"),
                .field("Updated", "updated_at"),
            ],
            empty: "No Live Activity matches.",
            tableID: "live-activities"
        )
    }

    func liveActivity(_ context: Context, id: String) async -> AdminPage {
        let json: JSONValue
        do {
            json = try await read("/v1/live-activities/" + AdminForm.encode(id), context, title: "Live Activity")
        } catch {
            return error.page
        }
        var html = HTML()
        details(
            json,
            [
                ("Id", "id"), ("State", "state"), ("Attributes type", "attributes_type"), ("App", "app"),
                ("Environment", "environment"), ("Start", "start"), ("Users", "users"), ("Channel", "channel_id"),
                ("Started", "started_at"), ("Ends at", "end_at"), ("Ended", "ended_at"), ("Created", "created_at"),
                ("Updated", "updated_at"), ("Failure", "failure_reason"),
            ],
            into: &html
        )
        html.element("h2", "Content state")
        html.element("pre", json["content_state"]?.compactText ?? "null", ["id": "content-state"])
        html.element("h2", "Timeline")
        let deliveries = json["deliveries"]?.arrayValue ?? []
        html.table(
            ["At", "Event", "Route", "APNs", "Reason", "APNs id", "Token"],
            rows: deliveries.map { delivery in
                [
                    HTML.cell(delivery["at"]?.display), HTML.cell(delivery["event"]?.display),
                    delivery["route"]?.display.map(HTML.badge) ?? HTML.cell(nil),
                    HTML.cell(delivery["status"]?.display), HTML.cell(delivery["reason"]?.display),
                    HTML.cell(delivery["apns_id"]?.display),
                    HTML.cell(delivery["token_prefix"]?.display.map { $0 + "…" }),
                ]
            },
            empty: "Nothing sent yet.",
            id: "timeline"
        )
        html.element("h2", "Instances")
        let instances = json["instances"]?.arrayValue ?? []
        let instanceKeys = instances.first?.objectValue?.keys.sorted() ?? []
        html.table(
            instanceKeys,
            rows: instances.map { instance in instanceKeys.map { HTML.cell(instance[$0]?.display) } },
            empty: "No device has reported this activity yet.",
            id: "instances"
        )
        for key in ["board", "poll"] {
            if let value = json[key], value != .null {
                html.element("h2", key == "board" ? "Board" : "Poll")
                html.element("pre", value.compactText)
            }
        }
        return AdminPage(title: "Live Activity", content: html.markup)
    }

    // MARK: Devices

    func devices(_ context: Context) async -> AdminPage {
        await listPage(
            context,
            title: "Devices",
            apiPath: "/v1/devices",
            itemsKey: "devices",
            filters: [
                AdminFilter(name: "token_prefix", label: "Token starts with", placeholder: "hex"),
                AdminFilter(name: "user_id", label: "User"),
                AdminFilter(name: "tag", label: "Tag"),
                AdminFilter(name: "status", label: "Status", choices: ["active", "invalid"]),
                AdminFilter(name: "app", label: "App"),
                AdminFilter(name: "environment", label: "Environment", choices: ["production", "sandbox"]),
            ],
            columns: [
                .field("Token", "token"), .badge("Status", "status"), .field("User", "user_id"), .field("Tags", "tags"),
                .field("App", "app"), .field("Environment", "environment"), .field("Invalid at", "invalid_at"),
                .field("Reason", "invalid_reason"), .field("Last registered", "last_registered_at"),
            ],
            empty: "No device matches.",
            tableID: "devices"
        )
    }

    // MARK: Jobs

    func jobs(_ context: Context) async throws -> AdminPage {
        let status = context.request.queryValue("status").flatMap(JobStatus.init(rawValue:)) ?? .dead
        let kind = context.request.queryValue("kind").flatMap { $0.isEmpty ? nil : $0 }
        var html = HTML()
        filterForm(
            [
                AdminFilter(name: "status", label: "Status", choices: JobStatus.allCases.map(\.rawValue)),
                AdminFilter(name: "kind", label: "Kind", placeholder: "notification.send"),
            ],
            values: [("status", status.rawValue), ("kind", kind ?? "")],
            action: "/admin/jobs",
            into: &html
        )
        let jobs = try await queue.list(statuses: [status], kind: kind, limit: 50)
        html.table(
            ["Id", "Kind", "Status", "Attempts", "Due", "Last error", "Updated", ""],
            rows: jobs.map { job in
                let id = RequestIdentifier.lowercaseString(job.id)
                var buttons = HTML()
                if [.dead, .failed, .cancelled].contains(job.status) {
                    button("Retry", action: "/admin/jobs/\(id)/retry", context: context, into: &buttons)
                }
                if job.status == .pending {
                    button(
                        "Cancel",
                        action: "/admin/jobs/\(id)/cancel",
                        context: context,
                        confirm: "Cancel this job?",
                        into: &buttons
                    )
                }
                return [
                    HTML.cell(id), HTML.cell(job.kind), HTML.badge(job.status.rawValue),
                    HTML.cell("\(job.attempts) of \(job.maxAttempts)"), HTML.cell(RFC3339.string(from: job.dueAt)),
                    HTML.cell(job.lastError), HTML.cell(RFC3339.string(from: job.updatedAt)), buttons.markup,
                ]
            },
            empty: "No \(status.rawValue) job\(kind.map { " of kind \($0)" } ?? "").",
            id: "jobs"
        )
        if jobs.count == 50 { html.element("p", "The 50 newest are shown.", ["class": "hint"]) }
        return AdminPage(title: "Jobs", content: html.markup)
    }

    func changeJob(_ context: Context, id: String, retry: Bool) async -> AdminOutcome {
        guard let uuid = UUID(uuidString: id) else {
            return .redirect("/admin/jobs", notice: "No job has the id \(id).")
        }
        do {
            let job = retry ? try await queue.retry(id: uuid) : try await queue.cancel(id: uuid)
            logger.notice(
                retry ? "admin retried a job" : "admin cancelled a job",
                metadata: ["job_id": .string(id), "kind": .string(job.kind)]
            )
            return .redirect(
                "/admin/jobs?status=\(job.status.rawValue)",
                notice: retry ? "Job \(id) is pending again, due now." : "Job \(id) is cancelled."
            )
        } catch {
            return .redirect("/admin/jobs", notice: "Nothing changed: \(error)")
        }
    }

    // MARK: Webhooks, wake schedules, channels

    /// The first 20 webhooks, each with its `delivery` (pending, dead, last error), read by
    /// `GET /v1/webhooks` and one `GET /v1/webhooks/{id}` each; and whether there are more.
    func webhookDeliveries(
        _ context: Context
    ) async throws(AdminPageInstead) -> (webhooks: [(webhook: JSONValue, delivery: JSONValue)], more: Bool) {
        let json = try await read("/v1/webhooks", query: [("limit", "20")], context, title: "Webhooks")
        var webhooks: [(webhook: JSONValue, delivery: JSONValue)] = []
        for webhook in json["webhooks"]?.arrayValue ?? [] {
            guard let id = webhook["id"]?.stringValue else { continue }
            let read = await api.call("GET", "/v1/webhooks/" + id, requestID: context.request.requestID)
            webhooks.append((webhook, read.json?["delivery"] ?? .null))
        }
        return (webhooks, json["next_cursor"]?.stringValue != nil)
    }

    func webhooks(_ context: Context) async -> AdminPage {
        let read: (webhooks: [(webhook: JSONValue, delivery: JSONValue)], more: Bool)
        do {
            read = try await webhookDeliveries(context)
        } catch {
            return error.page
        }
        var html = HTML()
        html.table(
            ["URL", "Events", "Pending", "Dead", "Delivered", "Last delivery", "Last error", "Last error at", ""],
            rows: read.webhooks.map { webhook, delivery in
                var test = HTML()
                if let id = webhook["id"]?.stringValue {
                    button(
                        "Send test event",
                        action: "/admin/webhooks/\(AdminForm.encode(id))/test",
                        context: context,
                        into: &test
                    )
                }
                return [
                    HTML.cell(webhook["url"]?.display), HTML.cell(webhook["events"]?.display),
                    HTML.cell(delivery["pending"]?.display), HTML.cell(delivery["dead"]?.display),
                    HTML.cell(delivery["delivered"]?.display), HTML.cell(delivery["last_delivery_at"]?.display),
                    HTML.cell(delivery["last_error"]?.display), HTML.cell(delivery["last_error_at"]?.display),
                    test.markup,
                ]
            },
            empty: "No webhook: POST /v1/webhooks adds one.",
            id: "webhooks"
        )
        if read.more { html.element("p", "The first 20 webhooks are shown.", ["class": "hint"]) }
        return AdminPage(title: "Webhooks", content: html.markup)
    }

    func sendTestEvent(_ context: Context, id: String) async -> AdminOutcome {
        let answer = await api.call(
            "POST",
            "/v1/webhooks/\(AdminForm.encode(id))/test",
            requestID: context.request.requestID
        )
        guard answer.isSuccess, let event = answer.json?["id"]?.stringValue else {
            return .redirect("/admin/webhooks", notice: "No test event was sent: \(answer.errorMessage)")
        }
        logger.notice("admin sent a webhook test event", metadata: ["event_id": .string(event)])
        return .redirect(
            "/admin/webhooks",
            notice: "Test event \(event) is queued: it counts as pending until the receiver takes it, "
                + "and its error shows here if it refuses."
        )
    }

    func wakeSchedules(_ context: Context) async -> AdminPage {
        await listPage(
            context,
            title: "Wake schedules",
            apiPath: "/v1/wake-schedules",
            itemsKey: "wake_schedules",
            filters: [],
            columns: [
                .link("Id", "id", to: "/admin/wake-schedules"), .field("Name", "name"), .field("Mode", "mode"),
                .field("Paused", "paused"), .field("Next run", "next_run_at"), .field("Last run", "last_run_at"),
            ],
            empty: "No wake schedule: POST /v1/wake-schedules adds one.",
            tableID: "wake-schedules"
        )
    }

    func wakeSchedule(_ context: Context, id: String) async -> AdminPage {
        let json: JSONValue
        do {
            json = try await read("/v1/wake-schedules/" + AdminForm.encode(id), context, title: "Wake schedule")
        } catch {
            return error.page
        }
        var html = HTML()
        details(
            json,
            [
                ("Id", "id"), ("Name", "name"), ("Mode", "mode"), ("Paused", "paused"), ("Next run", "next_run_at"),
                ("Last run", "last_run_at"), ("Created", "created_at"),
            ],
            into: &html
        )
        html.element("h2", "Runs")
        let runs = json["runs"]?.arrayValue ?? []
        let keys = runs.first?.objectValue?.keys.sorted() ?? []
        html.table(
            keys,
            rows: runs.map { run in keys.map { HTML.cell(run[$0]?.display) } },
            empty: "No run yet.",
            id: "runs"
        )
        return AdminPage(title: "Wake schedule", content: html.markup)
    }

    /// Apple allows 10,000 channels per app and environment (APNs answers
    /// `CannotCreateChannelConfig` past it).
    static let channelLimit = 10_000

    func channels(_ context: Context) async -> AdminPage {
        var query: [(name: String, value: String)] = []
        for name in ["app", "environment"] {
            if let value = context.request.queryValue(name), !value.isEmpty { query.append((name, value)) }
        }
        var html = HTML()
        filterForm(
            [
                AdminFilter(name: "app", label: "App"),
                AdminFilter(name: "environment", label: "Environment", choices: ["production", "sandbox"]),
            ],
            values: query,
            action: "/admin/channels",
            into: &html
        )
        var count = 0
        var cursor: String?
        var json: JSONValue = .null
        repeat {
            var pageQuery = query + [("limit", "1000")]
            if let cursor { pageQuery.append(("cursor", cursor)) }
            let answer = await api.call("GET", "/v1/channels", query: pageQuery, requestID: context.request.requestID)
            guard answer.isSuccess, let page = answer.json else {
                html.element("p", answer.errorMessage, ["class": "error", "role": "alert"])
                return AdminPage(title: "Channels", content: html.markup)
            }
            json = page
            count += page["channels"]?.arrayValue?.count ?? 0
            cursor = page["next_cursor"]?.stringValue
        } while cursor != nil && count < Self.channelLimit + 1000
        let share = Double(count) / Double(Self.channelLimit)
        html.open("p", ["class": "gauge-line"])
        html.text(
            "\(json["app"]?.display ?? "the default app") (\(json["environment"]?.display ?? "production")): "
                + "\(count) of Apple's \(Self.channelLimit) channels"
        )
        html.close("p")
        let width = min(100, Int((share * 100).rounded()))
        html.raw(
            "<svg class=\"gauge\" viewBox=\"0 0 100 6\" preserveAspectRatio=\"none\" role=\"img\" "
                + "aria-label=\"\(width) percent of the limit\"><rect class=\"track\" width=\"100\" height=\"6\"/>"
                + "<rect class=\"fill\" width=\"\(width)\" height=\"6\"/></svg>"
        )
        return AdminPage(title: "Channels", content: html.markup)
    }
}
