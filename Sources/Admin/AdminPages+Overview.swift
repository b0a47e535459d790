import Foundation
import HTTPRouting
import HeraldCore
import Jobs

extension AdminConsole {
    func overview(_ context: Context) async throws -> AdminPage {
        var html = HTML()
        let (series, endingAt) = trends.lastHour()
        html.element("h2", "The last hour, per minute")
        html.raw("<div class=\"charts\">")
        for (index, name) in AdminTrends.series.enumerated() {
            html.raw(AdminChart.bars(title: name, values: series[index], endingAt: endingAt, style: index))
        }
        html.raw("</div>")
        html.element(
            "p",
            "Counted by this instance since it started (herald_notification_tokens_total); each instance charts its own.",
            ["class": "hint"]
        )

        html.element("h2", "APNs connections")
        let connections = MetricsRegistry.shared.samples("herald_apns_connections")
            .map { sample in (endpoint: sample.labels.first { $0.0 == "endpoint" }?.1 ?? "", open: Int(sample.value)) }
            .filter { !$0.endpoint.isEmpty }
            .sorted { $0.endpoint < $1.endpoint }
        html.table(
            ["Endpoint", "Open connections", "State"],
            rows: connections.map { connection in
                [
                    HTML.cell(connection.endpoint), HTML.cell(String(connection.open)),
                    HTML.badge(connection.open > 0 ? "connected" : "closed"),
                ]
            },
            empty: "No connection to APNs yet: one opens with the first push to an app and environment.",
            id: "connections"
        )

        html.element("h2", "Job queue")
        let summary = try await queueSummary.value { [queue] in try await queue.summary() }
        let now = clock.now()
        html.table(
            ["Pending", "Running", "Dead", "Failed", "Oldest due job waiting"],
            rows: [
                [
                    HTML.cell(String(summary.count(.pending))), HTML.cell(String(summary.count(.running))),
                    HTML.linkCell(String(summary.count(.dead)), to: "/admin/jobs?status=dead"),
                    HTML.linkCell(String(summary.count(.failed)), to: "/admin/jobs?status=failed"),
                    HTML.cell(
                        summary.oldestDue.map { DurationText.text(Int64(now.timeIntervalSince($0))) }
                            ?? "nothing is due"
                    ),
                ]
            ],
            empty: "",
            id: "queue"
        )

        html.element("h2", "Webhook backlog")
        var pending = 0
        var dead = 0
        var failing: [String] = []
        for (webhook, delivery) in (try? await webhookDeliveries(context))?.webhooks ?? [] {
            pending += Int(delivery["pending"]?.numberValue ?? 0)
            dead += Int(delivery["dead"]?.numberValue ?? 0)
            if delivery["last_error"]?.stringValue != nil, let url = webhook["url"]?.stringValue { failing.append(url) }
        }
        html.table(
            ["Events waiting", "Dead events", "Webhooks whose last delivery failed"],
            rows: [[HTML.cell(String(pending)), HTML.cell(String(dead)), HTML.cell(failing.joined(separator: ", "))]],
            empty: "",
            id: "webhook-backlog"
        )
        return AdminPage(title: "Overview", content: html.markup)
    }
}

/// The overview's charts: server-rendered SVG, no script.
enum AdminChart {
    /// Bars of one value per minute, oldest first, with the largest value and the total.
    static func bars(title: String, values: [Double], endingAt: Date, style: Int) -> String {
        let width = 360.0
        let height = 110.0
        let top = 8.0
        let bottom = 18.0
        let largest = max(values.max() ?? 0, 1)
        let total = values.reduce(0, +)
        let slot = width / Double(max(values.count, 1))
        var svg = "<figure class=\"chart\"><figcaption>\(HTML.escape(title)) <b>\(Int(total))</b></figcaption>"
        svg +=
            "<svg viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" class=\"series-\(style)\" "
            + "aria-label=\"\(HTML.escape(title)) per minute over the last hour: \(Int(total)) in all, at most "
            + "\(Int(largest)) in a minute\">"
        svg += "<line class=\"axis\" x1=\"0\" y1=\"\(height - bottom)\" x2=\"\(width)\" y2=\"\(height - bottom)\"/>"
        for (index, value) in values.enumerated() where value > 0 {
            let barHeight = (height - top - bottom) * value / largest
            let x = Double(index) * slot + 0.5
            svg +=
                "<rect x=\"\(format(x))\" y=\"\(format(height - bottom - barHeight))\" width=\"\(format(slot - 1))\" "
                + "height=\"\(format(barHeight))\"><title>\(Int(value))</title></rect>"
        }
        svg += "<text x=\"0\" y=\"\(Int(height) - 4)\">−60 min</text>"
        svg += "<text x=\"\(Int(width))\" y=\"\(Int(height) - 4)\" text-anchor=\"end\">now</text>"
        svg += "<text x=\"\(Int(width))\" y=\"\(Int(top) + 2)\" text-anchor=\"end\">max \(Int(largest))/min</text>"
        svg += "</svg></figure>"
        return svg
    }

    private static func format(_ value: Double) -> String {
        String(Double(Int((value * 10).rounded())) / 10)
    }
}
