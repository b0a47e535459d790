import Foundation
import HTTPRouting
import HeraldCore

/// A filter of a list page: a query parameter passed on to `/v1` as it is.
struct AdminFilter: Sendable {
    var name: String
    var label: String
    /// The choices of a select; empty: a text field.
    var choices: [String] = []
    var placeholder = ""
}

/// A column of a list page: its header and its cell's markup from one item.
struct AdminColumn: Sendable {
    var header: String
    var cell: @Sendable (JSONValue) -> String

    /// A column showing the item's member `key` as text.
    static func field(_ header: String, _ key: String) -> AdminColumn {
        AdminColumn(header: header) { HTML.cell($0[key]?.display) }
    }

    static func badge(_ header: String, _ key: String) -> AdminColumn {
        AdminColumn(header: header) { item in item[key]?.display.map(HTML.badge) ?? HTML.cell(nil) }
    }

    /// The item's `key` as a link to `prefix/<value>`.
    static func link(_ header: String, _ key: String, to prefix: String) -> AdminColumn {
        AdminColumn(header: header) { item in
            guard let value = item[key]?.display else { return HTML.cell(nil) }
            return HTML.linkCell(value, to: prefix + "/" + AdminForm.encode(value))
        }
    }
}

extension AdminConsole {
    /// The size of every page of a list.
    static let pageSize = "50"

    /// A list page: the filters as a GET form, one page of `GET apiPath` with them, and a link to
    /// the next page. `/v1`'s refusal of a filter (a bad status, a bad time) is shown above the
    /// form, as it is.
    func listPage(
        _ context: Context,
        title: String,
        apiPath: String,
        itemsKey: String,
        filters: [AdminFilter],
        columns: [AdminColumn],
        empty: String,
        tableID: String,
        before: String = ""
    ) async -> AdminPage {
        let request = context.request
        var query: [(name: String, value: String)] = []
        for filter in filters {
            if let value = request.queryValue(filter.name), !value.isEmpty { query.append((filter.name, value)) }
        }
        var html = HTML()
        html.raw(before)
        filterForm(filters, values: query, action: context.path, into: &html)
        var apiQuery = query + [("limit", Self.pageSize)]
        if let cursor = request.queryValue("cursor"), !cursor.isEmpty { apiQuery.append(("cursor", cursor)) }
        let answer = await api.call("GET", apiPath, query: apiQuery, requestID: request.requestID)
        guard answer.isSuccess, let json = answer.json else {
            html.element("p", answer.errorMessage, ["class": "error", "role": "alert"])
            return AdminPage(title: title, content: html.markup, status: answer.status == 400 ? 400 : 200)
        }
        let items = json[itemsKey]?.arrayValue ?? []
        html.table(
            columns.map(\.header),
            rows: items.map { item in columns.map { $0.cell(item) } },
            empty: empty,
            id: tableID
        )
        nextPageLink(json["next_cursor"]?.stringValue, path: context.path, query: query, into: &html)
        return AdminPage(title: title, content: html.markup)
    }

    /// One item of `/v1` (`GET path`), or the page saying why it could not be read (its 404's
    /// message, say) under `title`.
    func read(
        _ path: String,
        query: [(name: String, value: String)] = [],
        _ context: Context,
        title: String
    ) async throws(AdminPageInstead) -> JSONValue {
        let answer = await api.call("GET", path, query: query, requestID: context.request.requestID)
        guard answer.isSuccess, let json = answer.json else {
            throw AdminPageInstead(AdminPage.message(status: answer.status, title: title, answer.errorMessage))
        }
        return json
    }

    func filterForm(
        _ filters: [AdminFilter],
        values: [(name: String, value: String)],
        action: String,
        into html: inout HTML
    ) {
        guard !filters.isEmpty else { return }
        html.open("form", ["method": "get", "action": action, "class": "filters"])
        for filter in filters {
            let value = values.first { $0.name == filter.name }?.value ?? ""
            html.open("label")
            html.element("span", filter.label)
            if filter.choices.isEmpty {
                html.open(
                    "input",
                    ["type": "text", "name": filter.name, "value": value, "placeholder": filter.placeholder]
                )
            } else {
                html.open("select", ["name": filter.name])
                html.element("option", "any", ["value": ""])
                for choice in filter.choices {
                    if choice == value {
                        html.element("option", choice, ["value": choice, "selected": "selected"])
                    } else {
                        html.element("option", choice, ["value": choice])
                    }
                }
                html.close("select")
            }
            html.close("label")
        }
        html.raw("<button type=\"submit\">Filter</button></form>")
    }

    func nextPageLink(
        _ cursor: String?,
        path: String,
        query: [(name: String, value: String)],
        into html: inout HTML
    ) {
        guard let cursor else { return }
        let target = (query + [("cursor", cursor)]).map { "\(AdminForm.encode($0.name))=\(AdminForm.encode($0.value))" }
            .joined(separator: "&")
        html.open("p", ["class": "pager"])
        html.link("Next page →", to: path + "?" + target, ["rel": "next"])
        html.close("p")
    }

    /// Key–value rows of `json`'s members `keys`, as a description list.
    func details(_ json: JSONValue, _ keys: [(label: String, key: String)], into html: inout HTML) {
        html.open("dl", ["class": "details"])
        for (label, key) in keys {
            html.element("dt", label)
            html.raw("<dd>" + HTML.cell(json[key]?.display) + "</dd>")
        }
        html.close("dl")
    }

    /// A POST button carrying the session's CSRF token; not drawn for a read-only session.
    func button(
        _ label: String,
        action: String,
        context: Context,
        confirm: String? = nil,
        into html: inout HTML
    ) {
        guard context.mayChange else { return }
        html.open("form", ["method": "post", "action": action, "class": "inline"])
        html.open("input", ["type": "hidden", "name": "csrf", "value": context.session.csrf])
        if let confirm {
            html.element("button", label, ["type": "submit", "data-confirm": confirm])
        } else {
            html.element("button", label, ["type": "submit"])
        }
        html.close("form")
    }
}

/// The page to show instead of the one asked for: why what it shows could not be read.
struct AdminPageInstead: Error {
    var page: AdminPage

    init(_ page: AdminPage) {
        self.page = page
    }
}
