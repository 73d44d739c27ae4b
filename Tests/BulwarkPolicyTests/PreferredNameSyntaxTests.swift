import Testing

@testable import BulwarkPolicy

@Suite("Preferred name syntax of SAN DNS names, in one pass")
struct PreferredNameSyntaxTests {
    /// The check as it was written before the one-pass version: labels split at dots, an optional leading `*`
    /// label dropped, then every label non-empty letters, digits and hyphens.
    static func reference(_ name: String) -> Bool {
        var labels = name.split(separator: ".", omittingEmptySubsequences: false)
        if labels.first == "*" { labels.removeFirst() }
        return !labels.isEmpty
            && labels.allSatisfy { label in
                !label.isEmpty
                    && label.utf8.allSatisfy { byte in
                        (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A)
                            || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D
                    }
            }
    }

    @Test func agreesWithTheLabelByLabelCheck() {
        let pieces = ["", "*", ".", "a", "Z9", "-", "_", "é", "**", "x-y"]
        var names: [String] = [""]
        for _ in 0..<4 {
            names = Array(Set(names + names.flatMap { name in pieces.map { name + $0 } }))
        }
        for name in names {
            #expect(WebPKIPolicy.hasPreferredNameSyntax(name) == Self.reference(name), "\(name)")
        }
    }

    @Test func examples() {
        for valid in ["example.com", "*.example.com", "a-b.c", "localhost", "xn--bcher-kva.example"] {
            #expect(WebPKIPolicy.hasPreferredNameSyntax(valid), "\(valid)")
        }
        for invalid in ["", "*", "*.", "a..b", "a.", ".a", "a*.b", "*.*.b", "a_b.c", "bücher.example", "a b"] {
            #expect(!WebPKIPolicy.hasPreferredNameSyntax(invalid), "\(invalid)")
        }
    }
}
