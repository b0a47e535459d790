/// Checks of a request's form that an API with a strict contract (`/v1`) makes before it reads
/// the body: the media type it is sent as, and that every query parameter is one the route knows.
extension HTTPRequest {
    /// Refuses a request with a body that is not sent as `application/json` (a `charset`
    /// parameter is allowed, and must be UTF-8).
    ///
    /// - Throws: ``HTTPError`` 415 `unsupported_media_type` saying what to send.
    public func requireJSONContentType() throws(HTTPError) {
        guard !body.isEmpty else { return }
        let value = headers["Content-Type"]
        if let value, Self.isJSON(mediaType: value) { return }
        let sent = value.map { "Content-Type: \(Self.printable($0))" } ?? "no Content-Type"
        throw HTTPError(
            status: 415,
            code: "unsupported_media_type",
            message: "the body was sent with \(sent): send JSON encoded as UTF-8 with "
                + "Content-Type: application/json",
            field: "Content-Type"
        )
    }

    /// Refuses a body not sent as an HTML form (`application/x-www-form-urlencoded`).
    ///
    /// - Throws: ``HTTPError`` 415 `unsupported_media_type`.
    public func requireFormContentType() throws(HTTPError) {
        guard !body.isEmpty else { return }
        let value = headers["Content-Type"]
        if let value,
            value.split(separator: ";").first?.trimmingASCIIWhitespace().lowercased()
                == "application/x-www-form-urlencoded"
        {
            return
        }
        let sent = value.map { "Content-Type: \(Self.printable($0))" } ?? "no Content-Type"
        throw HTTPError(
            status: 415,
            code: "unsupported_media_type",
            message: "the body was sent with \(sent): send the form as Content-Type: application/x-www-form-urlencoded",
            field: "Content-Type"
        )
    }

    /// Refuses a request whose query holds a parameter not in `known`.
    ///
    /// - Parameter route: names the route in the message, e.g. `GET /v1/notifications`.
    /// - Throws: ``HTTPError`` 400 `unknown_parameter` naming the first unknown one and listing the known ones.
    public func rejectUnknownQueryParameters(_ known: [String], route: String) throws(HTTPError) {
        guard let unknown = query.first(where: { !known.contains($0.name) }) else { return }
        let name = Self.printable(unknown.name)
        let allowed =
            known.isEmpty
            ? "\(route) takes no query parameters"
            : "the query parameters of \(route) are \(known.joined(separator: ", "))"
        throw HTTPError(
            status: 400,
            code: "unknown_parameter",
            message: "\(name.isEmpty ? "an empty name" : name) is not a query parameter here: \(allowed)",
            field: String(name.prefix(64))
        )
    }

    /// The `app` query parameter of a listing filtered by app: `nil` when absent.
    ///
    /// - Throws: ``HTTPError`` 400 `invalid_app` when it is empty or longer than `maximumBytes`.
    public func appFilter(maximumBytes: Int) throws(HTTPError) -> String? {
        let app = queryValue("app")
        if let app, app.isEmpty || app.utf8.count > maximumBytes {
            throw HTTPError(
                status: 400,
                code: "invalid_app",
                message: "app must be the bundle ID of a configured app, 1 to \(maximumBytes) bytes",
                field: "app"
            )
        }
        return app
    }

    /// Whether a `Content-Type` value is `application/json`, with at most a UTF-8 `charset`.
    static func isJSON(mediaType value: String) -> Bool {
        // What nearly every client sends, without splitting and lowercasing.
        if value == "application/json" || value == "application/json; charset=utf-8" { return true }
        var parts = value.split(separator: ";", omittingEmptySubsequences: false).map {
            $0.trimmingASCIIWhitespace().lowercased()
        }
        guard parts.removeFirst() == "application/json" else { return false }
        for parameter in parts {
            guard let equals = parameter.firstIndex(of: "=") else { return false }
            let name = parameter[..<equals].trimmingASCIIWhitespace()
            var setting = parameter[parameter.index(after: equals)...].trimmingASCIIWhitespace()
            if setting.count >= 2, setting.hasPrefix("\""), setting.hasSuffix("\"") {
                setting = String(setting.dropFirst().dropLast())
            }
            guard name == "charset", setting == "utf-8" || setting == "utf8" else { return false }
        }
        return true
    }

    /// Text a client sent, made safe to quote in a message: printable ASCII, at most 64 characters.
    static func printable(_ text: String) -> String {
        let cleaned = String(
            text.unicodeScalars.prefix(64).map { (0x20..<0x7F).contains($0.value) ? Character($0) : "?" }
        )
        return text.unicodeScalars.count > 64 ? cleaned + "..." : cleaned
    }
}

extension StringProtocol {
    fileprivate func trimmingASCIIWhitespace() -> String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
