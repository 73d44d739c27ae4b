/// The text a README keeps between two marker comments (`<!-- NAME:begin -->` and `<!-- NAME:end -->`), where a
/// test compares a table it computes with the one committed.
public enum ReadmeBlock {
    /// The lines between the markers of `name` in `readme`, or nil when either marker is missing.
    public static func committed(_ name: String, in readme: String) -> String? {
        guard let start = readme.range(of: "<!-- \(name):begin -->\n"),
            let end = readme.range(of: "<!-- \(name):end -->", range: start.upperBound..<readme.endIndex)
        else { return nil }
        return String(readme[start.upperBound..<end.lowerBound])
    }
}
