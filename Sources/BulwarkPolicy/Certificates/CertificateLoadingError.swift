/// An error raised while reading certificates from PEM or DER input.
///
/// The description names the source (a file path or a label given by the caller) and what was wrong with it, in
/// words (a weak key by type and size, a signature algorithm by name); ``debugDescription`` adds the parser's own
/// error, for bug reports.
public struct CertificateLoadingError: Error, Hashable, Sendable, CustomStringConvertible,
    CustomDebugStringConvertible
{
    private enum Code: Hashable, Sendable {
        case noCertificates
        case malformedPEM
        case malformedDER
        case unreadable
    }

    private let code: Code
    /// Where the input came from: a file path or a caller-supplied label.
    public let source: String
    /// What was wrong, in words.
    public let detail: String
    /// What the parser reported, verbatim, if anything.
    private let underlying: String?

    private init(_ code: Code, source: String, detail: String, underlying: String? = nil) {
        self.code = code
        self.source = source
        self.detail = detail
        self.underlying = underlying
    }

    static func noCertificates(in source: String) -> Self {
        Self(
            .noCertificates,
            source: source,
            detail: "no certificate found (expected PEM \"BEGIN CERTIFICATE\" or DER)"
        )
    }

    static func malformedPEM(in source: String, detail: String, underlying: String? = nil) -> Self {
        Self(.malformedPEM, source: source, detail: detail, underlying: underlying)
    }

    static func malformedDER(in source: String, detail: String, underlying: String? = nil) -> Self {
        Self(.malformedDER, source: source, detail: detail, underlying: underlying)
    }

    static func unreadable(_ source: String, detail: String) -> Self {
        Self(.unreadable, source: source, detail: detail)
    }

    /// The input held no certificate at all.
    public var isNoCertificates: Bool { self.code == .noCertificates }
    /// A PEM block was found but its contents were not a valid certificate.
    public var isMalformedPEM: Bool { self.code == .malformedPEM }
    /// The input was not PEM and did not parse as a DER certificate.
    public var isMalformedDER: Bool { self.code == .malformedDER }
    /// The file could not be read.
    public var isUnreadable: Bool { self.code == .unreadable }

    /// The source and what is wrong with it, in words.
    public var description: String {
        switch self.code {
        case .noCertificates: return "\(self.source): \(self.detail)"
        case .malformedPEM: return "\(self.source): malformed PEM certificate: \(self.detail)"
        case .malformedDER: return "\(self.source): not a PEM file and not a DER certificate: \(self.detail)"
        case .unreadable: return "\(self.source): cannot read file: \(self.detail)"
        }
    }

    /// The description, then what the parsing library reported, for bug reports.
    public var debugDescription: String {
        guard let underlying else { return self.description }
        return self.description + "\n  underlying error: " + underlying
    }
}
