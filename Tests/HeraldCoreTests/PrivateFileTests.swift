import Foundation
import HeraldCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Files Herald writes are 0600 from their creation; existing ones are replaced or tightened.
@Suite struct PrivateFileTests {
    static func directory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-private-\(UUID())").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func mode(_ path: String) -> UInt32? {
        var status = stat()
        guard lstat(path, &status) == 0 else { return nil }
        return UInt32(status.st_mode) & 0o7777
    }

    @Test(
        "write: a new file is 0600; a wider file is replaced by a 0600 one; a symbolic link is replaced, its target untouched"
    )
    func write() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let fresh = directory + "/fresh.pem"
        try PrivateFile.write(Array("key".utf8), to: fresh)
        #expect(Self.mode(fresh) == 0o600)
        #expect(try String(contentsOfFile: fresh, encoding: .utf8) == "key")

        let wide = directory + "/wide.env"
        #expect(FileManager.default.createFile(atPath: wide, contents: Data("old".utf8)))
        #expect(chmod(wide, 0o666) == 0)
        try PrivateFile.write(Array("new".utf8), to: wide)
        #expect(Self.mode(wide) == 0o600)
        #expect(try String(contentsOfFile: wide, encoding: .utf8) == "new")

        let target = directory + "/target"
        #expect(FileManager.default.createFile(atPath: target, contents: Data("target".utf8)))
        #expect(chmod(target, 0o644) == 0)
        let link = directory + "/link"
        #expect(symlink(target, link) == 0)
        try PrivateFile.write(Array("secret".utf8), to: link)
        #expect(Self.mode(link) == 0o600, "the link is now a private file")
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "target")
        #expect(Self.mode(target) == 0o644)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == [
                "fresh.pem", "link", "target", "wide.env",
            ]
        )

        do {
            try PrivateFile.write([1], to: directory + "/missing/file")
            Issue.record("a file in a missing directory was written")
        } catch {
            #expect(error.description.contains("missing/file"))
            #expect(error.errno == ENOENT)
        }
    }

    struct PrepareCase: Sendable, CustomTestStringConvertible {
        var existing: UInt32?
        var expected: PrivateFile.Preparation
        var mode: UInt32
        var testDescription: String { existing.map { "existing \(String($0, radix: 8))" } ?? "missing" }
    }

    @Test(
        "prepare: creates a missing file 0600, tightens one that others may read, leaves a private one",
        arguments: [
            PrepareCase(existing: nil, expected: .created, mode: 0o600),
            PrepareCase(existing: 0o644, expected: .tightened(from: 0o644), mode: 0o600),
            PrepareCase(existing: 0o660, expected: .tightened(from: 0o660), mode: 0o600),
            PrepareCase(existing: 0o600, expected: .unchanged, mode: 0o600),
            PrepareCase(existing: 0o400, expected: .unchanged, mode: 0o400),
        ]
    )
    func prepare(_ row: PrepareCase) throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/herald.sqlite"
        if let existing = row.existing {
            #expect(FileManager.default.createFile(atPath: path, contents: Data()))
            #expect(chmod(path, existing) == 0)
        }
        #expect(try PrivateFile.prepare(path) == row.expected)
        #expect(Self.mode(path) == row.mode)
        #expect(try PrivateFile.tighten(directory + "/absent") == .unchanged)
    }
}
