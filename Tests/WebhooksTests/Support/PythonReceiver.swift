import AsyncTestSupport
import Foundation
import ProcessTestSupport
import Testing

/// A receiver written with Python's standard library (Tests/Support/webhook_receiver.py) on
/// 127.0.0.1: `record` is an HTTP/1.1-only `http.server`; `bomb-h1` and `bomb-h2` answer with a
/// header list without end, over HTTP/1.1 or HTTP/2 (TLS, ALPN h2).
final class PythonReceiver: Sendable {
    enum Mode: String, Sendable {
        case record
        case bombHTTP1 = "bomb-h1"
        case bombHTTP2 = "bomb-h2"
    }

    static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Support/webhook_receiver.py").path

    let directory: URL
    let port: Int
    private let process: ChildProcess

    /// Starts the receiver and waits until it listens; over TLS with the test certificate when
    /// `tls` (always for `bombHTTP2`).
    init(_ mode: Mode, tls: Bool = false, certificatePEM: String, keyPEM: String) async throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-python-receiver-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let portFile = directory.appendingPathComponent("port").path
        let out = directory.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        var arguments = [Self.script, mode.rawValue, portFile, out.path]
        if tls || mode == .bombHTTP2 {
            let cert = directory.appendingPathComponent("cert.pem")
            let key = directory.appendingPathComponent("key.pem")
            try certificatePEM.write(to: cert, atomically: true, encoding: .utf8)
            try keyPEM.write(to: key, atomically: true, encoding: .utf8)
            arguments += [cert.path, key.path]
        }
        process = try ChildProcess(
            executable: "/usr/bin/python3",
            arguments: arguments,
            standardOutput: .discard,
            standardError: .capture
        )
        let started = process
        try await eventually("the Python receiver listens", timeout: .seconds(30)) {
            FileManager.default.fileExists(atPath: portFile) || !started.isRunning
        }
        guard let text = try? String(contentsOfFile: portFile, encoding: .utf8), let port = Int(text) else {
            throw PythonReceiverError(description: "python3 did not start: \(process.standardError.text)")
        }
        self.port = port
    }

    /// Stops the receiver and removes its files.
    func stop() async {
        _ = process.signal(SIGTERM)
        _ = try? await process.waitForExit()
        try? FileManager.default.removeItem(at: directory)
    }

    /// The POSTs `record` took, in order.
    var deliveries: [ReceivedDelivery] {
        let out = directory.appendingPathComponent("out")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: out.path)) ?? []
        return names.filter { $0.hasSuffix(".json") }
            .sorted { Int($0.dropLast(5)) ?? 0 < Int($1.dropLast(5)) ?? 0 }
            .compactMap { name in
                guard let data = FileManager.default.contents(atPath: out.appendingPathComponent(name).path),
                    let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                    let headers = object["headers"] as? [[String]],
                    let body = (object["body"] as? String).flatMap({ Data(base64Encoded: $0) })
                else { return nil }
                return ReceivedDelivery(
                    headers: headers.filter { $0.count == 2 }.map { (name: $0[0], value: $0[1]) },
                    body: Array(body)
                )
            }
    }

    /// The requests a bomb answered.
    var requestCount: Int {
        let path = directory.appendingPathComponent("out/requests").path
        return (try? String(contentsOfFile: path, encoding: .utf8)).flatMap { Int($0) } ?? 0
    }

    /// Runs `body` with the receiver, stopping it afterwards.
    static func with<T>(
        _ mode: Mode,
        tls: Bool = false,
        _ body: (PythonReceiver) async throws -> T
    ) async throws -> T {
        let receiver = try await PythonReceiver(
            mode,
            tls: tls,
            certificatePEM: ReceiverCertificate.shared.chainPEM,
            keyPEM: ReceiverCertificate.shared.keyPEM
        )
        do {
            let result = try await body(receiver)
            await receiver.stop()
            return result
        } catch {
            await receiver.stop()
            throw error
        }
    }
}

struct PythonReceiverError: Error, CustomStringConvertible {
    var description: String
}
