import Foundation

extension RedirectDecision {
    /// The decision as one JSON object on one line, the stable format of `bulwark redirect-check --json`:
    ///
    /// - `{"decision":"follow","url":"…","method":"…","headers":{…},"stripped":[…]}`: `url` is the resolved URL
    ///   (query and fragment included), `headers` the fields kept (lower-case names, sorted; repeated names joined
    ///   with `, `), `stripped` the lower-case names removed, in the order they appeared;
    /// - `{"decision":"refuse","reason":"…","detail":"…"}`: `reason` is the bounded label
    ///   (``RedirectRefusalReason/shortDescription``), `detail` the sentence.
    ///
    /// Keys always appear in that order. Strings are escaped as RFC 8259 requires (`"`, `\` and control characters;
    /// `/` and non-ASCII text are written as they are).
    public var json: String {
        switch self {
        case .follow(let follow):
            var merged: [String: String] = [:]
            for field in follow.headers {
                let name = field.lowercasedName
                merged[name] = merged[name].map { "\($0), \(field.value)" } ?? field.value
            }
            let headers = merged.keys.sorted().map { "\(Self.quoted($0)):\(Self.quoted(merged[$0]!))" }
            return "{\"decision\":\"follow\",\"url\":\(Self.quoted(follow.url.absoluteString)),"
                + "\"method\":\(Self.quoted(follow.method)),\"headers\":{\(headers.joined(separator: ","))},"
                + "\"stripped\":[\(follow.strippedHeaders.map(Self.quoted).joined(separator: ","))]}"
        case .refuse(let refusal):
            return "{\"decision\":\"refuse\",\"reason\":\(Self.quoted(refusal.shortDescription)),"
                + "\"detail\":\(Self.quoted(refusal.detail))}"
        }
    }

    /// A JSON string literal (Foundation's encoder: `"`, `\` and control characters escaped, `/` kept).
    static func quoted(_ text: String) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        guard let data = try? encoder.encode(text) else {
            return "\"\""
        }
        return String(decoding: data, as: UTF8.self)
    }
}
