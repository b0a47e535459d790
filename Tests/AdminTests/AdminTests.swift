import DatabaseTestSupport
import Foundation
import HTTPRouting
import HeraldCore
import HeraldCrypto
import Storage
import Testing

@testable import Admin

@Suite("Admin: the overview's per-minute counts")
struct TrendWindowTests {
    @Test("each minute counts what its totals grew by; the first sample is its minute's baseline")
    func deltas() {
        var window = TrendWindow(seriesCount: 2)
        window.record([10, 1], minute: 100)
        window.record([12, 1], minute: 100)
        window.record([15, 4], minute: 101)
        window.record([15, 4], minute: 103)
        let counts = window.perMinute(endingAt: 103)
        // Minute 103 is the last slot (59): minute 100 is slot 56.
        #expect(counts[0][56] == 2)
        #expect(counts[0][57] == 3)
        #expect(counts[1][57] == 3)
        #expect(counts[0][59] == 0)
        #expect(counts[0][..<56].allSatisfy { $0 == 0 })
    }

    @Test("a total that went down counts from zero; minutes older than the hour are dropped")
    func resetsAndAge() {
        var window = TrendWindow(seriesCount: 1)
        window.record([50], minute: 10)
        window.record([7], minute: 11)
        #expect(window.perMinute(endingAt: 11)[0][59] == 7)
        window.record([9], minute: 200)
        #expect(window.minutes.count == 1)
        #expect(window.perMinute(endingAt: 200)[0].allSatisfy { $0 == 0 })
    }
}

@Suite("Admin: pages, forms and keys")
struct AdminPartsTests {
    @Test("HTML escapes every character that could end a text or an attribute")
    func escaping() {
        #expect(
            HTML.escape(#"<script>"a"&'b'</script>"#) == "&lt;script&gt;&quot;a&quot;&amp;&#39;b&#39;&lt;/script&gt;"
        )
        #expect(HTML.escape("plain text") == "plain text")
        var html = HTML()
        html.link("x\"y", to: "/admin?a=<b>")
        #expect(html.markup == #"<a href="/admin?a=&lt;b&gt;">x&quot;y</a>"#)
    }

    @Test(
        "after signing in, only a console path is followed",
        arguments: [
            ("/admin/jobs?status=dead", "/admin/jobs?status=dead"),
            ("https://evil.example/admin", "/admin"),
            ("//evil.example", "/admin"),
            ("/admin/sign-in", "/admin"),
            ("/v1/devices", "/admin"),
            ("/admin\\..\\x", "/admin"),
        ]
    )
    func next(given: String, followed: String) {
        #expect(AdminConsole.safeNext(given) == followed)
    }

    @Test("a form body is read as percent-encoded UTF-8, + as a space")
    func form() throws {
        let request = HTTPRequest(
            method: "POST",
            path: "/admin/send",
            headers: ["Content-Type": "application/x-www-form-urlencoded"],
            body: Array("csrf=abc&payload=%7B%22aps%22%3A+1%7D&empty=".utf8)
        )
        let form = try AdminForm(request)
        #expect(form["csrf"] == "abc")
        #expect(form["payload"] == #"{"aps": 1}"#)
        #expect(form["empty"] == "")
        #expect(form["missing"] == nil)
        #expect(AdminForm.encode("a b&c=d/é") == "a%20b%26c%3Dd/%C3%A9")
        let bad = HTTPRequest(method: "POST", path: "/admin/send", body: Array("a=%ZZ".utf8))
        #expect(throws: HTTPError.self) { try AdminForm(bad) }
    }

    @Test("an API key signs in as an operator, a read-only key as a reader, any other key not at all")
    func keyring() {
        let keyring = AdminKeyring(
            operators: [SHA256.hash(Array("operator-key-0123456789".utf8))],
            readers: [SHA256.hash(Array("reader-key-0123456789".utf8))]
        )
        #expect(keyring.role(ofKey: "operator-key-0123456789") == .readWrite)
        #expect(keyring.role(ofKey: "reader-key-0123456789") == .readOnly)
        #expect(keyring.role(ofKey: "reader-key-012345678") == nil)
        #expect(AdminKeyring(operators: [], readers: []).isEmpty)
    }

    @Test("the settings: defaults, and every problem named")
    func settings() throws {
        let defaults = try AdminSettings.load(environment: [:])
        #expect(defaults.enabled && !defaults.insecureCookie && defaults.sessionTTL == 43_200)
        let set = try AdminSettings.load(environment: [
            "HERALD_ADMIN": "0", "HERALD_ADMIN_INSECURE_COOKIE": "1", "HERALD_ADMIN_SESSION_TTL": "600",
            "HERALD_ADMIN_READONLY_KEYS": "reader-key-0123456789, other-reader-0123456789",
        ])
        #expect(!set.enabled && set.insecureCookie && set.sessionTTL == 600 && set.readOnlyKeyDigests.count == 2)
        do {
            _ = try AdminSettings.load(environment: [
                "HERALD_ADMIN": "yes", "HERALD_ADMIN_SESSION_TTL": "5", "HERALD_ADMIN_READONLY_KEYS": "short",
            ])
            Issue.record("bad settings were accepted")
        } catch {
            #expect(error.problems.count == 3)
            #expect(
                error.problems.contains { $0.contains("HERALD_ADMIN_READONLY_KEYS entry 1") && !$0.contains("short") }
            )
        }
    }

    @Test("a chart draws one bar per minute that counted something, and says its total")
    func chart() {
        var values = Array(repeating: 0.0, count: 60)
        values[10] = 4
        values[59] = 2
        let svg = AdminChart.bars(title: "Sent <all>", values: values, endingAt: Date(), style: 0)
        #expect(svg.components(separatedBy: "<rect").count - 1 == 2)
        #expect(svg.contains("Sent &lt;all&gt; <b>6</b>"))
    }
}

@Suite("Admin: sessions")
struct AdminSessionStoreTests {
    let t = Date(timeIntervalSince1970: 1_790_000_000)

    @Test(
        "a session is found by its cookie's token until it expires or is deleted; only digests are stored",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func lifecycle(backend: Backend) async throws {
        try await withDatabase(backend) { database, _ in
            try await Migrator.migrate(database, AdminMigrations.all, logger: TestDatabase.quiet)
            let store = AdminSessionStore(database: database)
            let key = SHA256.hash(Array("operator-key-0123456789".utf8))
            let (token, session) = try await store.create(keyDigest: key, role: .readWrite, now: t, ttl: 600)
            #expect(token.utf8.count == 64)
            let found = try await store.find(token: token, now: t.addingTimeInterval(599))
            #expect(found == session)
            #expect(found?.keyDigest == key)
            #expect(try await store.find(token: token, now: t.addingTimeInterval(600)) == nil)
            #expect(try await store.find(token: String(repeating: "0", count: 64), now: t) == nil)
            #expect(try await store.find(token: "'; DROP TABLE admin_sessions; --", now: t) == nil)
            let stored = try await database.query("SELECT id, key_digest FROM admin_sessions")
            #expect(try stored.allSatisfy { try $0.string("id") != token && $0.string("key_digest").count == 64 })

            let (other, _) = try await store.create(keyDigest: key, role: .readOnly, now: t, ttl: 60)
            #expect(try await store.deleteExpired(now: t.addingTimeInterval(61)) == 1)
            #expect(try await store.find(token: other, now: t) == nil)
            try await store.delete(id: session.id)
            #expect(try await store.find(token: token, now: t) == nil)
        }
    }
}
