public import HTTPRouting
import HeraldCore
import Synchronization

/// The console reads and changes what `/v1` shows through `/v1` itself, in the process: each page
/// asks the server's own router (``attach(_:)``, once `herald serve` has built it) as a client
/// would, so that the console shows exactly what the API answers, pages as it pages and refuses
/// what it refuses, and depends on no feature's module.
///
/// A request is marked admitted: the console checked the session's key itself when it signed in
/// (``AdminKeyring``), and a read-only key, which `/v1` does not take, only ever reads.
public final class AdminAPI: Sendable {
    private let responder = Mutex<(any HTTPResponder)?>(nil)

    public init() {}

    /// The responder `/v1` (and `/simulator` in `--simulator` mode) is answered by.
    public func attach(_ responder: any HTTPResponder) {
        self.responder.withLock { $0 = responder }
    }

    /// What an in-process request answered: its status and its JSON body (`nil` when it had none or
    /// it was not JSON).
    struct Answer: Sendable {
        var status: Int
        var json: JSONValue?

        var isSuccess: Bool { (200..<300).contains(status) }

        /// The error format's message, or the status when the body had none.
        var errorMessage: String {
            json?["error"]?["message"]?.stringValue ?? "HTTP \(status)"
        }
    }

    /// Sends `method path?query` with a JSON `body` to the attached router.
    func call(
        _ method: String,
        _ path: String,
        query: [(name: String, value: String)] = [],
        body: JSONValue? = nil,
        requestID: String
    ) async -> Answer {
        guard let responder = responder.withLock({ $0 }) else {
            return Answer(status: 503, json: ["error": ["message": "the console is starting: try again in a moment"]])
        }
        var headers = HTTPHeaders()
        var bytes: [UInt8] = []
        if let body {
            try? body.write(to: &bytes)
            headers.add(name: "Content-Type", value: "application/json")
        }
        var request = HTTPRequest(
            method: method,
            path: path,
            query: query,
            headers: headers,
            body: bytes,
            requestID: requestID
        )
        request.isAdmitted = true
        do {
            let response = try await responder.respond(to: request)
            let json = response.body.isEmpty ? nil : try? JSONValue(parsing: response.body)
            return Answer(status: response.status, json: json)
        } catch {
            return Answer(status: 500, json: ["error": ["message": .string("\(error)")]])
        }
    }
}
