import Glibc
import Testing

@testable import HTTPServer

@Suite("Client addresses")
struct SocketAddressTests {
    @Test(
        "IPv4 addresses are written as inet_ntop writes them",
        arguments: ["0.0.0.0", "127.0.0.1", "10.0.100.9", "192.168.1.20", "255.255.255.255", "1.22.103.4"]
    )
    func dottedQuad(_ text: String) throws {
        var address = in_addr()
        try #require(inet_pton(AF_INET, text, &address) == 1)
        #expect(SocketAddressConversion.dottedQuad(address) == text)

        var socket = sockaddr_in()
        socket.sin_family = sa_family_t(AF_INET)
        socket.sin_addr = address
        let described = withUnsafePointer(to: &socket) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddressConversion.describe($0) }
        }
        #expect(described == text)
    }
}
