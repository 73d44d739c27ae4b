import BulwarkPolicy
import Foundation
import NIOHTTP1
import Tracing

/// The spans of one traced request: the request's span, and a child span per hop started with ``startHop(_:)``.
/// Made only when the client has a tracer (see ``BulwarkClient/TracingOptions``); an untraced request makes none of
/// this.
///
/// Nothing here reads a header value or a credential; URLs are written as ``URLRedaction`` shows them.
///
/// Both traces are classes: a request in flight keeps them in several async frames, where a reference takes 8 bytes and
/// the two existentials 80.
final class RequestTrace: Sendable {
    let tracer: any Tracer
    let span: any Span

    init(tracer: any Tracer, request: BulwarkRequest) {
        self.tracer = tracer
        self.span = tracer.startSpan(request.method.rawValue, ofKind: .client)
        Self.setRequestAttributes(on: self.span, request)
    }

    /// Starts the span of a hop: the request itself (`number` 0), or the `number`th redirect followed.
    func startHop(_ request: BulwarkRequest, number: Int) -> HopTrace {
        let span = self.tracer.startSpan(request.method.rawValue, context: self.span.context, ofKind: .client)
        Self.setRequestAttributes(on: span, request)
        if number > 0 {
            span.attributes["http.request.resend_count"] = number
        }
        return HopTrace(tracer: self.tracer, span: span)
    }

    /// Ends the request's span with its final response.
    func finish(_ response: BulwarkResponse) {
        Self.setStatus(on: self.span, response.status)
        self.span.attributes["bulwark.redirect.count"] = response.redirects.count
        self.span.end()
    }

    /// Ends the request's span with its failure.
    func fail(_ error: any Error) {
        Self.recordFailure(error, on: self.span)
        if let error = error as? BulwarkError, !error.redirects.isEmpty {
            self.span.attributes["bulwark.redirect.count"] = error.redirects.count
        }
        self.span.end()
    }

    static func setRequestAttributes(on span: any Span, _ request: BulwarkRequest) {
        span.attributes["http.request.method"] = request.method.rawValue
        span.attributes["url.full"] = URLRedaction.redacted(request.url)
        if let target = try? RequestTarget(request.url) {
            span.attributes["url.scheme"] = target.scheme
            span.attributes["server.address"] = target.host
            span.attributes["server.port"] = target.port
        }
    }

    static func setStatus(on span: any Span, _ status: HTTPResponseStatus) {
        span.attributes["http.response.status_code"] = Int(status.code)
        if status.code >= 400 {
            span.setStatus(SpanStatus(code: .error))
        }
    }

    static func recordFailure(_ error: any Error, on span: any Span) {
        span.recordError(error)
        let label = (error as? BulwarkError)?.shortDescription ?? "error"
        span.attributes["error.type"] = label
        span.setStatus(SpanStatus(code: .error, message: label))
    }
}

/// The span of one hop of a traced request.
final class HopTrace: Sendable {
    let tracer: any Tracer
    let span: any Span

    init(tracer: any Tracer, span: any Span) {
        self.tracer = tracer
        self.span = span
    }

    /// Writes the hop's trace context into its outgoing headers (after the credentials, so never in their place).
    func inject(into headers: inout HTTPHeaders) {
        self.tracer.inject(self.span.context, into: &headers, using: HTTPHeadersInjector())
    }

    /// Records what the connection established: its TLS version (`1.2`, `1.3`), nil for plain HTTP.
    func connected(tlsVersion: String?) {
        if let tlsVersion {
            self.span.attributes["tls.protocol.version"] = tlsVersion
        }
    }

    /// Records the response head: status, protocol, the trust verdict of its connection and whether a pin matched.
    func responded(_ response: BulwarkResponse) {
        RequestTrace.setStatus(on: self.span, response.status)
        self.span.attributes["network.protocol.version"] =
            response.httpVersion.major == 2 ? "2" : "\(response.httpVersion.major).\(response.httpVersion.minor)"
        if let trust = response.serverTrust {
            self.span.attributes["bulwark.trust.verdict"] = "trusted"
            let pinMatched = trust.trustedChain?.notices.contains { $0.code == "pin_matched" } ?? false
            self.span.attributes["bulwark.trust.pin_matched"] = pinMatched
        }
    }

    /// Records the redirect policy's decision for the hop's redirect response.
    func decided(_ record: RedirectRecord) {
        self.span.attributes["bulwark.redirect.decision"] = record.decision.shortDescription
        if let follow = record.decision.follow {
            self.span.attributes["bulwark.redirect.location"] = URLRedaction.redacted(follow.url)
        }
    }

    /// Ends the span after the hop's response head (and its redirect decision).
    func end() {
        self.span.end()
    }

    /// Ends the span with the hop's failure: a refused chain sets the verdict `refused` and its first reason.
    func fail(_ error: any Error) {
        if let refusal = (error as? BulwarkError)?.trustRefusal {
            self.span.attributes["bulwark.trust.verdict"] = "refused"
            self.span.attributes["bulwark.trust.pin_matched"] = false
            self.span.attributes["bulwark.trust.refusal"] = refusal.shortDescription
        }
        RequestTrace.recordFailure(error, on: self.span)
        self.span.end()
    }
}

/// Writes trace context fields into request headers.
struct HTTPHeadersInjector: Injector {
    func inject(_ value: String, forKey key: String, into headers: inout HTTPHeaders) {
        headers.replaceOrAdd(name: key, value: value)
    }
}
