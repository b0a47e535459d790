import Devices

/// Target `client-tags`: the parser of `HERALD_CLIENT_TAGS` (``ClientTagPolicy``).
///
/// Input: the setting's value as UTF-8. A value that parses must allow every tag and prefix it
/// lists, and parse again from its own description to the same policy; either failing traps.
public enum ClientTagsFuzz {
    public static func run(_ data: [UInt8]) {
        let text = String(decoding: data, as: UTF8.self)
        guard let policy = try? ClientTagPolicy.parse(text) else { return }
        for tag in policy.tags { precondition(policy.allows(tag), "a listed tag is refused") }
        for prefix in policy.prefixes { precondition(policy.allows(prefix + "x"), "a listed prefix is refused") }
        guard let again = try? ClientTagPolicy.parse(policy.description) else {
            preconditionFailure("the policy's own description does not parse")
        }
        precondition(again.tags == policy.tags && Set(again.prefixes) == Set(policy.prefixes), "no round trip")
    }
}
