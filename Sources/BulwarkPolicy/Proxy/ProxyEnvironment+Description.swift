extension ProxyEnvironment: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The proxy variables by name, each value as ``ProxyEndpoint/redacted(_:)`` shows it (no user information):
    /// `ProxyEnvironment(https_proxy=http://***@proxy.example:3128, no_proxy=localhost)`.
    public var description: String {
        let variables = self.redactedVariables.map { "\($0.name)=\($0.value)" }
        return "ProxyEnvironment(" + variables.joined(separator: ", ") + ")"
    }

    /// The same as ``description``: the values are redacted here too.
    public var debugDescription: String { self.description }

    /// The redacted variables, so that `dump` shows no password either.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "variables": self.redactedVariables.map { "\($0.name)=\($0.value)" },
                "noProxy": self.noProxy.map { String(describing: $0) } as Any,
            ],
            displayStyle: .struct
        )
    }

    private var redactedVariables: [(name: String, value: String)] {
        self.variables.sorted { $0.key < $1.key }.map { (name: $0.key, value: ProxyEndpoint.redacted($0.value)) }
    }
}
