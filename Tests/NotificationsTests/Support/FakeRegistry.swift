import APNs
import Audiences
import Devices
import Foundation
import Notifications
import Synchronization

/// A device registry in memory for the sender's domain tests: devices by token with a user, tags
/// and a status, read in token order like the real registry's keyset pages (its cursor is the
/// last token). It records the cursor of every page read and can fail a chosen read, as a
/// database gone mid-send would.
final class FakeRegistry: AudienceResolver {
    struct Device {
        var user: String?
        var tags: Set<String> = []
        var active = true
    }

    private struct State {
        var devices: [String: Device] = [:]
        var cursors: [String?] = []
        var failingRead: Int?
    }

    private let state = Mutex(State())

    struct ReadFailed: Error {}

    func register(_ token: String, user: String? = nil, tags: Set<String> = [], active: Bool = true) {
        state.withLock { $0.devices[token] = Device(user: user, tags: tags, active: active) }
    }

    /// The cursor each read was given, in order.
    var cursors: [String?] { state.withLock { $0.cursors } }

    /// Makes the `read`-th read from now on (1 is the next) throw, once.
    func failRead(_ read: Int) {
        state.withLock { $0.failingRead = $0.cursors.count + read }
    }

    func activeTokens(
        of audience: Audience,
        app: String,
        environment: APNSEnvironment,
        after cursor: String?,
        limit: Int
    ) async throws -> (tokens: [String], next: String?) {
        try state.withLock { state in
            state.cursors.append(cursor)
            if state.failingRead == state.cursors.count {
                state.failingRead = nil
                throw ReadFailed()
            }
            let selected = state.devices.filter { token, device in
                guard device.active, cursor.map({ token > $0 }) ?? true else { return false }
                switch audience {
                case .all: return true
                case .users(let users): return device.user.map(users.contains) ?? false
                case .tags(.any(let tags)): return !device.tags.isDisjoint(with: tags)
                case .tags(.all(let tags)): return device.tags.isSuperset(of: tags)
                case .tokens: return false
                }
            }.keys.sorted()
            let page = Array(selected.prefix(limit))
            return (page, selected.count > limit ? page.last : nil)
        }
    }
}
