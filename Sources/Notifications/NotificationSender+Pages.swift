import Devices
import Foundation
import HeraldCore
import Jobs

/// The tokens one send pass sends, a page at a time: first the rows without a final result (in
/// ordinal order), then the tokens of pages stored by an earlier pass that have no result yet, then,
/// for an audience resolved at send time, the registry's next page, stored with the resume cursor
/// before it is sent (``NotificationStore/appendResolved``).
///
/// A pass never holds more than one page, whatever the audience's size. After a crash the next
/// pass sends the tokens still without a result, then reads the registry on from the cursor:
/// no page is read twice, and a device is sent twice only when its push was in flight (or its
/// result not yet written) at the crash.
struct PendingPages: Sendable {
    let store: NotificationStore
    let notification: StoredNotification
    let owner: String
    let clock: any HeraldClock
    let sendLease: TimeInterval
    let pageSize: Int
    /// The audience still being resolved, with its resolver; `nil` when every device is a row.
    var resolving: (state: AudienceState, resolver: any AudienceResolver)?
    /// The last ordinal handed out.
    private(set) var afterOrdinal = -1
    /// Where the scan of earlier passes' pages stands; `nil` once it found nothing left.
    private var afterPageOrdinal: Int? = -1

    init(
        store: NotificationStore,
        notification: StoredNotification,
        owner: String,
        clock: any HeraldClock,
        sendLease: TimeInterval,
        pageSize: Int,
        resolving: (state: AudienceState, resolver: any AudienceResolver)?
    ) {
        self.store = store
        self.notification = notification
        self.owner = owner
        self.clock = clock
        self.sendLease = sendLease
        self.pageSize = max(1, pageSize)
        self.resolving = resolving
    }

    /// The next page to send; empty when nothing is left.
    ///
    /// - Throws: ``NotificationSender/ClaimLost`` when another sender took the notification over.
    mutating func next() async throws -> [DeliveryResult] {
        let rows = try await store.unfinished(id: notification.id, after: afterOrdinal, limit: pageSize)
        if let last = rows.last {
            afterOrdinal = last.ordinal
            return rows
        }
        if let after = afterPageOrdinal {
            // Rows with an ordinal below the claim's token count that appear from now on are this
            // pass's own results (a `retrying` one waits for the next pass).
            afterOrdinal = max(afterOrdinal, notification.tokenCount - 1)
            if let page = try await store.unrecordedPageTokens(
                id: notification.id,
                after: after,
                before: notification.tokenCount,
                at: clock.now()
            ) {
                afterPageOrdinal = page.through
                return page.tokens
            }
            afterPageOrdinal = nil
        }
        while let (current, resolver) = resolving {
            var state = current
            let (tokens, next) = try await resolver.activeTokens(
                of: state.audience,
                app: notification.app,
                environment: notification.environment,
                after: state.cursor,
                limit: pageSize
            )
            let isLast = next == nil
            let now = clock.now()
            guard
                let stored = try await store.appendResolved(
                    tokens,
                    to: notification.id,
                    cursor: next,
                    ownership: NotificationStore.SendOwnership(owner: owner, until: now.addingTimeInterval(sendLease)),
                    at: now
                )
            else { throw NotificationSender.ClaimLost() }
            state.cursor = next
            resolving = isLast ? nil : (state, resolver)
            if let last = stored.last {
                afterOrdinal = last.ordinal
                return stored
            }
        }
        return []
    }
}
