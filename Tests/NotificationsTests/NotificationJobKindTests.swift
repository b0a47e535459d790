import Notifications
import Testing

@Suite("Notification job kinds")
struct NotificationJobKindTests {
    @Test("the send kind is stable: stored jobs name it")
    func sendKind() {
        #expect(NotificationJobKind.send == "notification.send")
    }
}
