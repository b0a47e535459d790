import Glibc
import HeraldCore
import Testing

@testable import Webhooks

/// The destination policy's classifier and address parser: every refused range, the IPv6 forms
/// that carry an IPv4 address, and the IPv4 spellings getaddrinfo and curl accept.
@Suite("webhook destinations")
struct WebhookDestinationTests {
    /// Address text, and the range it is refused as (`nil`: public, allowed).
    static let table: [(String, WebhookAddressRange?)] = [
        // IPv4
        ("0.0.0.0", .unspecified), ("0.1.2.3", .unspecified),
        ("127.0.0.1", .loopback), ("127.255.255.254", .loopback),
        ("10.0.0.1", .privateNetwork), ("10.255.255.255", .privateNetwork),
        ("172.16.0.1", .privateNetwork), ("172.31.255.255", .privateNetwork), ("172.32.0.1", nil),
        ("172.15.255.255", nil),
        ("192.168.0.1", .privateNetwork), ("192.169.0.1", nil),
        ("169.254.169.254", .linkLocal), ("169.254.0.1", .linkLocal), ("169.255.0.1", nil),
        ("100.64.0.1", .carrierGradeNAT), ("100.127.255.255", .carrierGradeNAT), ("100.128.0.1", nil),
        ("100.63.255.255", nil),
        ("224.0.0.1", .multicast), ("239.255.255.250", .multicast),
        ("255.255.255.255", .broadcast), ("240.0.0.1", .reserved), ("192.0.0.170", .reserved),
        ("198.18.0.1", .reserved),
        ("8.8.8.8", nil), ("93.184.216.34", nil), ("1.1.1.1", nil), ("11.0.0.1", nil),
        // IPv6
        ("::", .unspecified), ("::1", .loopback), ("fe80::1", .linkLocal), ("febf::1", .linkLocal),
        ("fc00::1", .uniqueLocal), ("fd00::1", .uniqueLocal), ("fdff::1", .uniqueLocal), ("fec0::1", .uniqueLocal),
        ("ff02::1", .multicast), ("ff05::2", .multicast), ("100::1", .reserved),
        ("2606:4700:4700::1111", nil), ("2001:4860:4860::8888", nil),
        // IPv4 inside IPv6: mapped, compatible, translated, NAT64, 6to4, Teredo.
        ("::ffff:127.0.0.1", .loopback), ("::ffff:7f00:1", .loopback), ("::ffff:10.0.0.1", .privateNetwork),
        ("::ffff:169.254.169.254", .linkLocal), ("::ffff:0.0.0.0", .unspecified), ("::ffff:8.8.8.8", nil),
        ("::127.0.0.1", .loopback), ("::10.0.0.1", .privateNetwork),
        ("::ffff:0:127.0.0.1", .loopback), ("::ffff:0:8.8.8.8", nil),
        ("64:ff9b::127.0.0.1", .loopback), ("64:ff9b::a9fe:a9fe", .linkLocal), ("64:ff9b::8.8.8.8", nil),
        ("64:ff9b:1::1", .reserved),
        ("2002:7f00:1::1", .loopback), ("2002:c0a8:101::1", .privateNetwork), ("2002:808:808::1", nil),
        ("2001:0:7f00:1::", .loopback), ("2001:0:808:808::80ff:fffe", .loopback), ("2001:0:808:808::f7f7:f7f7", nil),
    ]

    @Test("each range is refused as itself; public addresses are not")
    func classifier() throws {
        for (text, expected) in Self.table {
            let address = try #require(WebhookAddress(literal: text), "\(text)")
            #expect(address.refusedRange == expected, "\(text)")
        }
    }

    @Test("IPv4 literals are read as inet_aton reads them (so as getaddrinfo and curl connect)")
    func oddSpellings() throws {
        let spellings: [(String, String)] = [
            ("2130706433", "127.0.0.1"), ("0x7f.1", "127.0.0.1"), ("127.1", "127.0.0.1"), ("0177.0.0.1", "127.0.0.1"),
            ("0x7f000001", "127.0.0.1"), ("127.0.1", "127.0.0.1"), ("0", "0.0.0.0"),
            ("0xA9.0xFE.0xA9.0xFE", "169.254.169.254"),
            ("10.0x10101", "10.1.1.1"), ("017700000001", "127.0.0.1"), ("3232235777", "192.168.1.1"),
        ]
        for (text, expected) in spellings {
            #expect(WebhookAddress(literal: text)?.description == expected, "\(text)")
            #expect(WebhookAddress(literal: text)?.refusedRange != nil, "\(text)")
        }
        // Names and malformed numbers are not literals.
        for text in [
            "example.com", "1.2.3.4.5", "256.1.1.1", "1.2.3.256", "1.2.65536", "08.1.1.1", "0x", "0x.1", "1..1",
            "4294967296", "1.2.3.4.", "", "0x1g", "[::1", "::g",
        ] {
            #expect(WebhookAddress(literal: text) == nil, "\(text)")
        }
        // Brackets and zones as URLs carry them.
        #expect(WebhookAddress(literal: "[::1]")?.refusedRange == .loopback)
        #expect(WebhookAddress(literal: "fe80::1%eth0")?.refusedRange == .linkLocal)
    }

    @Test("the IPv4 parser agrees with glibc's inet_aton")
    func agreesWithInetAton() {
        let inputs = [
            "1", "1.2", "1.2.3", "1.2.3.4", "0x1.0x2", "00.00.00.00", "0x0.0x0", "077", "078", "0xFFFFFFFF",
            "0x100000000",
            "255.255.255.255", "255.255.255.256", "255.16777215", "255.16777216", "1.65535", "1.2.65535", "1.2.65536",
            "00000000000000000000001", "0x000000000000000000001", "1.", ".1", "a.b.c.d", "0X7F.1", "09", "1.2.3.4.5",
        ]
        for input in inputs {
            var address = in_addr()
            let glibc = inet_aton(input, &address) == 1 ? UInt32(bigEndian: address.s_addr) : nil
            #expect(WebhookAddress.parseIPv4(Array(input.utf8)) == glibc, "\(input)")
        }
    }

    @Test(
        "creation: literals, localhost names and names resolving only to refused addresses are refused; DNS failure is not"
    )
    func creationPolicy() async throws {
        let metrics = MetricsRegistry()
        let policy = WebhookDestinationPolicy(
            resolve: { host, _ in
                switch host {
                case "loopback.example": return ["127.0.0.1", "::1"]
                case "mixed.example": return ["10.0.0.1", "93.184.216.34"]
                case "public.example": return ["93.184.216.34"]
                default: throw CancellationError()
                }
            },
            metrics: metrics
        )
        for url in [
            "https://127.0.0.1/", "https://[::1]:8443/x", "https://[::ffff:127.0.0.1]/", "https://0x7f.1/",
            "https://loopback.example/", "http://2130706433/", "https://LocalHost./", "https://api.localhost:8443/",
        ] {
            do {
                try await policy.check(url: url)
                Issue.record("accepted \(url)")
            } catch {
                #expect(error.code == "destination_not_allowed", "\(url)")
                #expect(error.field == "url")
            }
        }
        for url in [
            "https://public.example/", "https://mixed.example/", "https://unresolvable.example/", "https://8.8.8.8/",
        ] {
            try await policy.check(url: url)
        }
        #expect(metrics.value("herald_webhook_destinations_refused_total", labels: [("stage", "creation")]) == 8)
        let allowing = WebhookDestinationPolicy(allowPrivate: true, resolve: { _, _ in ["127.0.0.1"] })
        try await allowing.check(url: "https://127.0.0.1/")
        try await allowing.check(url: "https://loopback.example/")
    }
}
