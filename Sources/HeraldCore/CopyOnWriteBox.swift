/// A value's fields in one heap box, shared by copies until one of them changes (copy on write).
///
/// For value types handed from layer to layer (a request, a response, a push): a copy of a value
/// with many separately counted fields costs a retain and a release per field, often on strings
/// every request shares; a copy of a box costs one, on a box only this value's copies share.
/// Fields are read in place, and changed in place when no other copy shares the box.
///
/// ```swift
/// public struct Message {
///     private struct Fields { var subject: String; var body: [UInt8] }
///     private var storage: CopyOnWriteBox<Fields>
///     public var subject: String {
///         get { storage.fields.subject }
///         set { storage.fields.subject = newValue }
///     }
/// }
/// ```
@frozen
public struct CopyOnWriteBox<Fields: Sendable>: Sendable {
    @usableFromInline
    final class Storage: @unchecked Sendable {
        // @unchecked Sendable, and no dynamic exclusivity checks: `fields` changes only in a box
        // that no other copy can see (`fields`' `_modify` makes it unique first), so no access
        // can overlap another.
        @usableFromInline @exclusivity(unchecked) var fields: Fields

        @inlinable
        init(_ fields: Fields) {
            self.fields = fields
        }
    }

    @usableFromInline var storage: Storage

    @inlinable
    public init(_ fields: Fields) {
        storage = Storage(fields)
    }

    /// The fields, read in place; changing them first gives this copy a box of its own when the
    /// box is shared.
    @inlinable
    public var fields: Fields {
        _read { yield storage.fields }
        _modify {
            if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.fields) }
            yield &storage.fields
        }
    }

    /// Whether both share one box (so their fields are equal without comparing them).
    @inlinable
    public func sharesStorage(with other: Self) -> Bool {
        storage === other.storage
    }
}
