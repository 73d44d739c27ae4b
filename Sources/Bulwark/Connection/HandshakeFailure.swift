import NIOCore
import NIOSSL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A TLS handshake that failed for a reason other than trust, told in words: what the server did and what Bulwark
/// accepts.
///
/// NIOSSL reports these as `handshakeFailed` with BoringSSL's error queue, whose text holds packed error numbers
/// and the path of a BoringSSL source file in the build directory. Only the reason name is read from it ("the
/// server sent the protocol-version alert"); the original text stays in the error's `debugDescription`.
struct HandshakeFailure {
    enum Kind: Equatable {
        /// The server speaks no TLS version Bulwark offers (a protocol-version alert, or a hello below the minimum).
        case protocolVersion
        /// The server found nothing in common with the client hello (cipher suites, groups, signature algorithms).
        case noCommonParameters
        /// The server's bytes are not TLS at all (a plain HTTP port).
        case notTLS
        /// The server closed or reset the connection before the handshake ended.
        case closed(reason: String)
        /// The server refused the client's certificate, or required one: an alert about the client certificate,
        /// named in words ("unknown ca").
        case clientCertificateRejected(alert: String)
        /// The server sent another alert, named in words.
        case alert(String)
        /// BoringSSL's reason, in words.
        case other(String?)
    }

    let kind: Kind
    let host: String
    let port: Int
    /// The error as the library reported it, for `debugDescription`.
    let underlying: String

    init(_ error: any Error, host: String, port: Int) {
        self.host = host
        self.port = port
        self.underlying = String(reflecting: error)
        self.kind = Self.kind(of: error)
    }

    /// `host:port`, with an IPv6 literal in brackets.
    var authority: String { Self.authority(host: self.host, port: self.port) }

    /// `host:port`, `[v6]:port`: how errors name a server.
    static func authority(host: String, port: Int) -> String {
        let literalIPv6 = host.contains(":") && !host.hasPrefix("[")
        return literalIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// The error to throw. `offered` is the version the server answered a probe with (``TLSVersionProbe``), when a
    /// protocol-version failure was probed.
    func error(minimum: BulwarkClient.TLSOptions.Version, offered: TLSVersionProbe.Version? = nil) -> BulwarkError {
        let requirement = "Bulwark requires \(Self.name(of: minimum)) or later"
        let sentence: String
        switch self.kind {
        case .protocolVersion:
            if let offered, offered.isBelow(minimum) {
                sentence = "the server at \(self.authority) offered only \(offered.name); \(requirement)"
            } else {
                sentence = "the server at \(self.authority) supports no TLS version Bulwark accepts; \(requirement)"
            }
        case .noCommonParameters:
            sentence =
                "the server at \(self.authority) refused the TLS handshake: it shares no cipher suite, "
                + "key-exchange group or signature algorithm with Bulwark, or it requires a client certificate"
        case .notTLS:
            sentence =
                "the server at \(self.authority) did not answer with TLS (is it a plain HTTP port, or "
                + "another protocol?)"
        case .closed(let reason):
            sentence = "the server at \(self.authority) \(reason) during the TLS handshake"
        case .clientCertificateRejected(let alert):
            return Self.clientCertificateRejected(
                host: self.host,
                authority: self.authority,
                alert: alert,
                underlying: self.underlying
            )
        case .alert(let alert):
            sentence = "the server at \(self.authority) ended the TLS handshake with the alert \"\(alert)\""
        case .other(let reason):
            sentence = "the TLS handshake with \(self.authority) failed" + (reason.map { ": \($0)" } ?? "")
        }
        return BulwarkError(.tlsHandshakeFailed, host: self.host, detail: sentence, underlying: self.underlying)
    }

    static func name(of version: BulwarkClient.TLSOptions.Version) -> String {
        switch version {
        case .tls12: return "TLS 1.2"
        case .tls13: return "TLS 1.3"
        }
    }

    static let versionReasons: Set<String> = ["TLSV1_ALERT_PROTOCOL_VERSION", "UNSUPPORTED_PROTOCOL"]
    static let noCommonReasons: Set<String> = [
        "SSLV3_ALERT_HANDSHAKE_FAILURE", "NO_SHARED_CIPHER", "TLSV1_ALERT_INSUFFICIENT_SECURITY",
        "NO_COMMON_SIGNATURE_ALGORITHMS", "HANDSHAKE_FAILURE_ON_CLIENT_HELLO", "NO_CIPHERS_AVAILABLE",
    ]
    static let notTLSReasons: Set<String> = ["WRONG_VERSION_NUMBER", "HTTP_REQUEST", "HTTPS_PROXY_REQUEST"]
    /// The alerts a server sends about the client's certificate (RFC 8446 section 6.2): the server evaluates no other
    /// certificate, so each of these is a refusal of the client certificate, or of its absence.
    static let clientCertificateReasons: Set<String> = [
        "SSLV3_ALERT_BAD_CERTIFICATE", "SSLV3_ALERT_UNSUPPORTED_CERTIFICATE", "SSLV3_ALERT_CERTIFICATE_REVOKED",
        "SSLV3_ALERT_CERTIFICATE_EXPIRED", "SSLV3_ALERT_CERTIFICATE_UNKNOWN", "TLSV1_ALERT_UNKNOWN_CA",
        "TLSV1_ALERT_ACCESS_DENIED", "TLSV1_ALERT_CERTIFICATE_REQUIRED",
    ]

    /// The name of the alert (`unknown ca`) when `error` is a server's alert about the client certificate, during
    /// the handshake or after it (in TLS 1.3 the server checks the client's certificate after the client finished
    /// its handshake, so the alert arrives when the response is read).
    static func clientCertificateAlert(in error: any Error) -> String? {
        var boring: BoringSSLError?
        if let error = error as? BoringSSLError { boring = error }
        if let error = error as? NIOSSLError, case .handshakeFailed(let inner) = error { boring = inner }
        guard let boring, case .clientCertificateRejected(let alert) = Self.kind(of: boring) else { return nil }
        return alert
    }

    /// The ``BulwarkError/Code/clientCertificateRejected`` error: the host and the alert in words.
    static func clientCertificateRejected(
        host: String,
        authority: String,
        alert: String,
        underlying: String?
    ) -> BulwarkError {
        let sentence: String
        if alert == "certificate required" {
            sentence =
                "the server at \(authority) requires a client certificate and none was sent (TLS alert "
                + "\"\(alert)\"); configure one for this host in clientIdentities"
        } else {
            sentence = "the server at \(authority) rejected the client certificate (TLS alert \"\(alert)\")"
        }
        return BulwarkError(.clientCertificateRejected, host: host, detail: sentence, underlying: underlying)
    }

    static func kind(of error: any Error) -> Kind {
        if let error = error as? NIOSSLError {
            switch error {
            case .uncleanShutdown: return .closed(reason: "closed the connection")
            case .handshakeFailed(let boring): return Self.kind(of: boring)
            default: return .other(nil)
            }
        }
        if let error = error as? BoringSSLError { return Self.kind(of: error) }
        if let error = error as? ChannelError {
            switch error {
            case .ioOnClosedChannel, .eof, .alreadyClosed, .outputClosed, .inputClosed:
                return .closed(reason: "closed the connection")
            default: return .other(nil)
            }
        }
        if let error = error as? IOError {
            if error.errnoCode == ECONNRESET { return .closed(reason: "reset the connection") }
            return .closed(reason: "broke the connection (\(String(cString: strerror(error.errnoCode))))")
        }
        return .other(nil)
    }

    static func kind(of error: BoringSSLError) -> Kind {
        guard case .sslError(let queue) = error else {
            if case .zeroReturn = error { return .closed(reason: "closed the connection") }
            return .other(nil)
        }
        let reasons = queue.compactMap { Self.reasonName(String(describing: $0)) }
        if reasons.contains(where: Self.versionReasons.contains) { return .protocolVersion }
        if let alert = reasons.first(where: Self.clientCertificateReasons.contains) {
            return .clientCertificateRejected(alert: Self.alertName(alert))
        }
        if reasons.contains(where: Self.noCommonReasons.contains) { return .noCommonParameters }
        if reasons.contains(where: Self.notTLSReasons.contains) { return .notTLS }
        if let alert = reasons.first(where: { $0.hasPrefix("TLSV1_ALERT_") || $0.hasPrefix("SSLV3_ALERT_") }) {
            return .alert(Self.alertName(alert))
        }
        return .other(reasons.first.map { $0.replacingOccurrences(of: "_", with: " ").lowercased() })
    }

    /// An alert's reason name in words: `TLSV1_ALERT_UNKNOWN_CA` → `unknown ca`.
    static func alertName(_ reason: String) -> String {
        reason.split(separator: "_").dropFirst(2).joined(separator: " ").lowercased()
    }

    /// The reason name in NIOSSL's text of one BoringSSL error:
    /// `Error: 268435696 error:10000100:SSL routines:OPENSSL_internal:UNSUPPORTED_PROTOCOL at /…/file.cc:123`.
    static func reasonName(_ text: String) -> String? {
        guard let start = text.range(of: "error:") else { return nil }
        // code:library:function:REASON at path:line
        let fields = text[start.upperBound...].split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false)
        guard fields.count == 4 else { return nil }
        let reason = fields[3].prefix { ($0.isASCII && ($0.isUppercase || $0.isNumber)) || $0 == "_" }
        return reason.isEmpty ? nil : String(reason)
    }
}
