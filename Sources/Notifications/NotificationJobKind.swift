/// The job kinds the notifications service registers.
public enum NotificationJobKind {
    /// Sends one stored notification to its tokens.
    public static let send = "notification.send"
}
