import Foundation
import Testing

@testable import BulwarkPolicy

@Suite("Request URLs")
struct RequestURLTests {
    @Test("reads origin, normalized path, the path as written, query and fragment")
    func reading() throws {
        let read = try RequestURL(url("HTTPS://API.Example.COM.:443/v1/./a/../b?q=%20x#frag"))
        #expect(read.origin == (try Origin(scheme: "https", host: "api.example.com", port: nil)))
        #expect(read.path == "/v1/b")
        #expect(read.pathAsWritten == "/v1/./a/../b")
        #expect(read.query == "q=%20x")
        #expect(read.fragment == "frag")
        #expect(read.pathAndQuery == "/v1/b?q=%20x")
        #expect(read.withoutFragment == "https://api.example.com/v1/b?q=%20x")
        #expect(read.text == "https://api.example.com/v1/b?q=%20x#frag")
        #expect(read.redacted == "https://api.example.com/v1/b")
        #expect(read.url?.absoluteString == read.text)
        #expect(try RequestURL(try #require(read.url)) == read.withPathAsWritten(read.path))

        let bare = try RequestURL(url("http://[::1]:8080"))
        #expect(bare.path == "/")
        #expect(bare.pathAsWritten == "/")
        #expect(bare.query == nil && bare.fragment == nil)
        #expect(bare.withoutFragment == "http://[::1]:8080/")
    }

    @Test("user information is refused, whatever it holds")
    func userInfo() {
        for text in ["https://user@a.example/", "https://user:pass@a.example/", "https://:pass@a.example/"] {
            let error = #expect(throws: URLReadingError.self, "\(text)") { try RequestURL(url(text)) }
            #expect(error?.code == .userInfo)
            #expect(error?.description.contains("pass") == false)
        }
        let error = #expect(throws: URLReadingError.self) { try RequestURL(url("ftp://a.example/")) }
        #expect(error?.code == .unsupportedScheme)
    }

    /// RFC 3986 section 5.4's examples, as paths merged with the base `/b/c/d;p`, and the edges.
    @Test("dot-segment removal, RFC 3986 section 5.2.4")
    func dotSegments() {
        let cases: [(String, String)] = [
            ("/b/c/g", "/b/c/g"), ("/b/c/./g", "/b/c/g"), ("/b/c/g/", "/b/c/g/"), ("/b/c/.", "/b/c/"),
            ("/b/c/./", "/b/c/"), ("/b/c/..", "/b/"), ("/b/c/../", "/b/"), ("/b/c/../g", "/b/g"), ("/b/c/../..", "/"),
            ("/b/c/../../", "/"), ("/b/c/../../g", "/g"), ("/b/c/../../../g", "/g"), ("/b/c/../../../../g", "/g"),
            ("/./g", "/g"), ("/../g", "/g"), ("/b/c/g.", "/b/c/g."), ("/b/c/.g", "/b/c/.g"), ("/b/c/g..", "/b/c/g.."),
            ("/b/c/..g", "/b/c/..g"), ("/b/c/./../g", "/b/g"), ("/b/c/./g/.", "/b/c/g/"), ("/b/c/g/./h", "/b/c/g/h"),
            ("/b/c/g/../h", "/b/c/h"), ("/b/c/g;x=1/./y", "/b/c/g;x=1/y"), ("/b/c/g;x=1/../y", "/b/c/y"),
            ("mid/content=5/../6", "mid/6"), ("", ""), ("/", "/"), ("/a//b", "/a//b"), ("/a//../b", "/a/b"),
            ("/%2e%2e/a", "/%2e%2e/a"), ("/a/..;/b", "/a/..;/b"), ("/..", "/"), ("/.", "/"),
        ]
        for (path, expected) in cases {
            #expect(RequestURL.removingDotSegments(path) == expected, "\(path)")
        }
    }

    /// The shortcut for paths without a dot segment gives what the algorithm gives, for every path of up to three
    /// segments drawn from the shapes that matter (dots alone, dots with other characters, empty segments).
    @Test("the shortcut for paths without dot segments agrees with RFC 3986's loop")
    func dotSegmentShortcut() {
        let shapes = ["", ".", "..", "...", "a", ".a", "a.", "..a", "%2e", ".;"]
        var paths: [String] = [""]
        for _ in 0..<3 {
            paths += paths.flatMap { path in shapes.map { path.isEmpty ? $0 : path + "/" + $0 } }
        }
        for base in Set(paths) {
            for path in [base, "/" + base, base + "/"] {
                let segments = path.split(separator: "/", omittingEmptySubsequences: false)
                let hasDotSegment = segments.contains { $0 == "." || $0 == ".." }
                #expect(RequestURL.hasDotSegment(path) == hasDotSegment, "\(path)")
                #expect(
                    RequestURL.removingDotSegments(path) == RequestURL.removingDotSegmentsStepByStep(path),
                    "\(path)"
                )
                if !hasDotSegment {
                    #expect(RequestURL.removingDotSegmentsStepByStep(path) == path, "\(path)")
                }
            }
        }
    }

    @Test("a URL built from an origin and a path normalizes the path once")
    func building() throws {
        let origin = try Origin(scheme: "https", host: "a.example", port: nil)
        let built = RequestURL(origin: origin, path: "/v1/../x/./", query: nil, fragment: nil)
        #expect(built.path == "/x/")
        #expect(
            RequestURL(origin: origin, path: "", query: "q", fragment: nil).withoutFragment == "https://a.example/?q"
        )
    }
}

extension RequestURL {
    /// This URL as read back from its own text, whose written path is the normalized one.
    fileprivate func withPathAsWritten(_ path: String) -> RequestURL {
        RequestURL(origin: self.origin, path: path, query: self.query, fragment: self.fragment)
    }
}
