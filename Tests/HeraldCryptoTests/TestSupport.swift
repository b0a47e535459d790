import Foundation
import HeraldCrypto
import ProcessTestSupport
import Testing

/// Bytes from hexadecimal text; whitespace is ignored so long vectors can be wrapped.
func hex(_ text: String) -> [UInt8] {
    let digits = Array(text.filter { !$0.isWhitespace }.utf8)
    precondition(digits.count % 2 == 0, "odd number of hex digits")
    func value(_ digit: UInt8) -> UInt8 {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: preconditionFailure("not a hex digit")
        }
    }
    return stride(from: 0, to: digits.count, by: 2).map { value(digits[$0]) << 4 | value(digits[$0 + 1]) }
}

/// Lower-case hexadecimal text of `bytes`.
func hexString(_ bytes: [UInt8]) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}

/// Bytes of base64url text from a published vector; fails the test when the text is not base64url.
func base64URL(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [UInt8] {
    try #require(Base64URL.decode(text), "not base64url: \(text)", sourceLocation: sourceLocation)
}

/// What one run of the `openssl` command printed.
struct CommandResult {
    var status: Int32
    var output: String
    var errorOutput: String
}

/// A scratch directory for files the `openssl` command reads and writes, removed by `remove()`.
struct ScratchDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("herald-crypto-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func path(_ name: String) -> String {
        url.appendingPathComponent(name).path
    }

    func write(_ name: String, _ text: String) throws {
        try Data(text.utf8).write(to: url.appendingPathComponent(name))
    }

    func write(_ name: String, _ bytes: [UInt8]) throws {
        try Data(bytes).write(to: url.appendingPathComponent(name))
    }

    func read(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: url.appendingPathComponent(name)))
    }

    func readText(_ name: String) throws -> String {
        String(decoding: try read(name), as: UTF8.self)
    }

    func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}

/// Runs the system's `openssl` command-line tool (an independent implementation of the formats
/// under test) with `arguments`, and returns its exit status and output.
func runOpenSSL(_ arguments: [String]) async throws -> CommandResult {
    let result = try await ChildProcess.run("/usr/bin/env", arguments: ["openssl"] + arguments)
    return CommandResult(
        status: result.termination.status,
        output: result.standardOutput,
        errorOutput: result.standardError
    )
}

/// Runs `openssl` and fails the test unless it exits with status 0.
@discardableResult
func requireOpenSSL(
    _ arguments: [String],
    sourceLocation: SourceLocation = #_sourceLocation
) async throws -> String {
    let result = try await runOpenSSL(arguments)
    try #require(
        result.status == 0,
        "openssl \(arguments.joined(separator: " ")) failed: \(result.errorOutput)",
        sourceLocation: sourceLocation
    )
    return result.output
}
