import CloudKit
import Foundation
import HeraldCrypto
import Testing

@Suite struct CloudKitSignerTests {
    @Test func placeholder() {}
}
