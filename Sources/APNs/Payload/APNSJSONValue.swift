public import HeraldCore

/// A payload's JSON value: HeraldCore's ``HeraldCore/JSONValue``, the one JSON grammar.
public typealias APNSJSONValue = JSONValue

/// A double that JSON cannot carry: HeraldCore's ``HeraldCore/JSONWritingError``.
public typealias APNSJSONWritingError = JSONWritingError
