import Foundation

extension SecurityEvent {
    /// The ``details`` keys whose values are URLs (or, for a `Location` that could not be resolved, its text).
    public static let urlDetailKeys: Set<DetailKey> = [.from, .to, .target, .location]

    /// This event with the path of every URL it carries replaced by `placeholder`: in ``message`` and in every
    /// detail. Scheme, host and port stay; so do ``kind``, ``host``, ``reason``, ``requestID`` and ``time``.
    ///
    /// By default events keep URL paths (without query, fragment or user information), which name the resource a
    /// redirect or refusal concerned. A path can hold a secret too — a reset token, a signed link, a session id in
    /// `/s/TOKEN/` — so where events leave the process (a log shipper, a metrics backend), wrap the monitor in
    /// ``PathRedactingEventMonitor`` to drop them:
    ///
    /// ```text
    /// redirect (302) from https://a.example/reset/SECRET to https://b.example/ refused: …
    /// redirect (302) from https://a.example/… to https://b.example/ refused: …
    /// ```
    ///
    /// A path that is only `/` is kept. A detail under ``urlDetailKeys`` that is not an absolute URL (the text of a
    /// relative `Location`) is replaced whole, wherever it appears in the message too.
    public func redactingURLPaths(placeholder: String = "/…") -> SecurityEvent {
        // The URL details are what messages are built from: replace them, longest first, wherever they appear.
        var replacements: [(String, String)] = []
        for key in Self.urlDetailKeys.sorted() {
            guard let value = self.details[key]?.description, !value.isEmpty, value != "/" else { continue }
            let redacted = Self.redactingPath(ofURLText: value, placeholder: placeholder)
            if redacted != value && (value.contains("://") || value.utf8.count >= 3) {
                replacements.append((value, redacted))
            }
        }
        replacements.sort { $0.0.utf8.count > $1.0.utf8.count }
        func redact(_ text: String) -> String {
            var result = text
            for (original, redacted) in replacements {
                result = result.replacingOccurrences(of: original, with: redacted)
            }
            return Self.redactingPaths(inText: result, placeholder: placeholder)
        }
        var details = Details()
        for (key, value) in self.details {
            details[key] =
                Self.urlDetailKeys.contains(key)
                ? value.mappingText { Self.redactingPath(ofURLText: $0, placeholder: placeholder) }
                : value.mappingText(redact)
        }
        return SecurityEvent(
            kind: self.kind,
            host: self.host,
            requestID: self.requestID,
            reason: self.reason,
            message: redact(self.message),
            details: details,
            time: self.time
        )
    }

    /// `text`, an absolute URL or a relative reference, with its path replaced: `https://a.example:8443/x/y` becomes
    /// `https://a.example:8443/…`; a relative reference becomes the placeholder. Empty text and `/` stay.
    static func redactingPath(ofURLText text: String, placeholder: String) -> String {
        guard !text.isEmpty, text != "/" else { return text }
        guard let separator = text.range(of: "://") else { return placeholder }
        let afterScheme = text[separator.upperBound...]
        guard let slash = afterScheme.firstIndex(of: "/") else { return text }
        let path = text[slash...]
        return path == "/" ? text : String(text[..<slash]) + placeholder
    }

    /// `text` with the path of every absolute URL in it (`scheme://authority/path`, up to the next white space)
    /// replaced by the placeholder. Punctuation that ends a sentence or clause right after a URL (`:`, `,`, `;`, `.`,
    /// `)`) is kept.
    static func redactingPaths(inText text: String, placeholder: String) -> String {
        var result = ""
        var rest = Substring(text)
        while let separator = rest.range(of: "://") {
            // The authority runs to the first "/" or white space; the path from that "/" to the next white space.
            var index = separator.upperBound
            while index < rest.endIndex, rest[index] != "/", !rest[index].isWhitespace {
                index = rest.index(after: index)
            }
            result += rest[..<index]
            guard index < rest.endIndex, rest[index] == "/" else {
                rest = rest[index...]
                continue
            }
            var end = index
            while end < rest.endIndex, !rest[end].isWhitespace {
                end = rest.index(after: end)
            }
            var pathEnd = end
            while pathEnd > rest.index(after: index), ":,;.)".contains(rest[rest.index(before: pathEnd)]) {
                pathEnd = rest.index(before: pathEnd)
            }
            let path = rest[index..<pathEnd]
            result += path == "/" ? String(path) : placeholder
            result += rest[pathEnd..<end]
            rest = rest[end...]
        }
        return result + rest
    }
}

/// An ``EventMonitor`` that passes every event on to another with the paths of its URLs redacted (see
/// ``SecurityEvent/redactingURLPaths(placeholder:)``): for event sinks where a path could leak a token.
///
/// ```swift
/// configuration.eventMonitor = PathRedactingEventMonitor(LoggingEventMonitor(logger: logger))
/// ```
public struct PathRedactingEventMonitor: EventMonitor {
    /// The monitor that receives the redacted events.
    public let base: any EventMonitor
    /// What replaces a path.
    public let placeholder: String

    /// A monitor that redacts URL paths, replacing each with `placeholder`, before `base` sees the event.
    public init(_ base: any EventMonitor, placeholder: String = "/…") {
        self.base = base
        self.placeholder = placeholder
    }

    /// Passes `event` to the base monitor with the path of every URL it carries replaced by the placeholder.
    public func record(_ event: SecurityEvent) {
        self.base.record(event.redactingURLPaths(placeholder: self.placeholder))
    }
}
