import BulwarkPolicy

/// Prints the presented and verified chain of every handshake (the `DumpTrustMonitor` of the Alamofire pinning
/// guides), one `sha256/…: subject` line per certificate.
public struct ChainDumpMonitor: EventMonitor {
    private let write: @Sendable (String) -> Void

    /// Sends each dump to `write` (standard output by default).
    public init(write: @escaping @Sendable (String) -> Void = { print($0) }) {
        self.write = write
    }

    /// Writes the presented and verified chains of a `trust_evaluated`, `trust_refused` or `pin_failed` event;
    /// ignores other events.
    public func record(_ event: SecurityEvent) {
        guard event.kind == .trustEvaluated || event.kind == .trustRefused || event.kind == .pinFailed else { return }
        var lines = ["start dump: \(event.host ?? "?") (\(event.shortDescription))"]
        if let presented = event.details[.presented]?.list, !presented.isEmpty {
            lines.append("presented chain:")
            lines += presented.map { "  " + $0 }
        }
        if let verified = event.details[.verified]?.list, !verified.isEmpty {
            lines.append("verified chain:")
            lines += verified.map { "  " + $0 }
        }
        lines.append("---- end ----")
        self.write(lines.joined(separator: "\n"))
    }
}
