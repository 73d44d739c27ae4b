/// One header field of a request the redirect policy rewrites: a name as sent and its value.
///
/// Header names compare case-insensitively in HTTP; ``lowercasedName`` is what the policy compares.
public struct HeaderField: Hashable, Sendable, CustomStringConvertible {
    /// The field name, as sent.
    public var name: String
    /// The field value.
    public var value: String

    /// A field `name: value`.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// The name in lower case.
    public var lowercasedName: String { self.name.lowercased() }

    /// `name: value`.
    public var description: String { "\(self.name): \(self.value)" }
}
