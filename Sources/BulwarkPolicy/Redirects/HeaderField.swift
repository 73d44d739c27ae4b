/// One header field of a request the redirect policy rewrites: a name as sent and its value.
///
/// Header names compare case-insensitively in HTTP; ``lowercasedName`` is what the policy compares.
///
/// A field whose name is in ``redactedNames`` (`Authorization`, `Cookie`, `Set-Cookie`, `Proxy-Authorization`)
/// prints its value as `<redacted>` in ``description``, ``debugDescription``, string interpolation, `dump` and
/// `Mirror`; ``value`` itself is unchanged.
public struct HeaderField: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The field name, as sent.
    public var name: String
    /// The field value.
    public var value: String

    /// The lower-case names of the header fields whose values are credentials, and are printed as `<redacted>` by
    /// Bulwark's types (header fields, redirect decisions, the client's requests and responses): the credential
    /// headers a redirect strips on an origin change (``RedirectPolicy/defaultCredentialHeaders``: `authorization`,
    /// `cookie`, `proxy-authorization`) and the response header that sets a cookie, `set-cookie`.
    ///
    /// Security events never carry header values at all, only these names.
    public static let redactedNames: Set<String> = RedirectPolicy.defaultCredentialHeaders.union(["set-cookie"])

    /// A field `name: value`.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// The name in lower case.
    public var lowercasedName: String { self.name.lowercased() }

    /// Whether the value is a credential (the name is in ``redactedNames``).
    public var isRedacted: Bool { Self.isRedacted(name: self.name) }

    /// Whether a field named `name` holds a credential (the name, in any case, is in ``redactedNames``).
    public static func isRedacted(name: String) -> Bool {
        self.redactedNames.contains(name.lowercased())
    }

    /// `value`, or `<redacted>` for a field named `name` that holds a credential: how Bulwark's types print a value.
    public static func printableValue(name: String, value: String) -> String {
        self.isRedacted(name: name) ? "<redacted>" : value
    }

    /// `name: value`, or `name: <redacted>` for a credential.
    public var description: String { "\(self.name): \(Self.printableValue(name: self.name, value: self.value))" }

    /// Same as ``description``.
    public var debugDescription: String { self.description }

    /// The name and the printable value.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: ["name": self.name, "value": Self.printableValue(name: self.name, value: self.value)],
            displayStyle: .struct
        )
    }
}
