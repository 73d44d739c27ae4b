import Tracing

extension BulwarkClient {
    /// Spans through swift-distributed-tracing, as AsyncHTTPClient makes them: one span per request, from
    /// ``BulwarkClient/execute(_:deadline:logger:)`` to the final response head, and one child span per hop (the
    /// request itself, then each redirect followed), whose context is injected into the hop's headers
    /// (`traceparent` and the like, as the tracer's instrument writes them).
    ///
    /// Both kinds are client spans named by the method (`GET`). Their attributes, every one free of header values,
    /// credentials, query strings and user information (URLs are redacted as security events redact them):
    ///
    /// | Attribute | On | Value |
    /// |---|---|---|
    /// | `http.request.method` | both | the method |
    /// | `url.full` | both | the URL without user information, query or fragment |
    /// | `url.scheme`, `server.address`, `server.port` | both | from the URL |
    /// | `http.response.status_code` | both | the status (request span: of the final response) |
    /// | `http.request.resend_count` | hop | the hop's number, from 1, on redirect hops |
    /// | `network.protocol.version` | hop | `1.1` or `2` |
    /// | `tls.protocol.version` | hop | `1.2` or `1.3` |
    /// | `bulwark.trust.verdict` | hop | `trusted`, or `refused` when the handshake's chain was refused |
    /// | `bulwark.trust.pin_matched` | hop | whether a configured pin matched the verified chain |
    /// | `bulwark.trust.refusal` | hop | the refusal's first reason (`pin_mismatch`, `expired`, …) |
    /// | `bulwark.redirect.decision` | hop | `follow`, or `refuse:REASON`, for a redirect response |
    /// | `bulwark.redirect.location` | hop | the followed hop's URL, redacted |
    /// | `bulwark.redirect.count` | request | the redirects followed or refused |
    /// | `error.type` | both | the ``BulwarkError/Code`` of a failure (`trust_refused`, `read_timeout`, …) |
    ///
    /// A failure is also recorded on the span as its ``BulwarkError``, whose description is safe to export, and
    /// sets the span's status to error, as does a response status of 400 or above (as in AsyncHTTPClient).
    public struct TracingOptions: Sendable {
        /// The tracer spans are started with; nil makes none, and costs nothing per request but one check.
        public var tracer: (any Tracer)?

        /// The tracer bootstrapped in `InstrumentationSystem` when the options are made (as AsyncHTTPClient's
        /// default); none while only the no-op tracer is bootstrapped.
        public init() {
            let tracer = InstrumentationSystem.tracer
            self.tracer = tracer is NoOpTracer ? nil : tracer
        }

        /// Options with `tracer`; nil turns tracing off.
        public init(tracer: (any Tracer)?) {
            self.tracer = tracer
        }
    }
}
