import Foundation
import Testing

@testable import BulwarkPolicy

@Suite("Origins")
struct OriginTests {
    @Test("one origin for every spelling of a scheme, host and port")
    func canonical() throws {
        let spellings: [(String, String, Int?)] = [
            ("https", "bücher.example", nil), ("HTTPS", "BÜCHER.example.", 443),
            ("https", "xn--bcher-kva.example", nil),
            ("Https", "XN--BCHER-KVA.EXAMPLE.", 443),
        ]
        let origins = try spellings.map { try Origin(scheme: $0.0, host: $0.1, port: $0.2) }
        #expect(Set(origins).count == 1)
        let origin = try #require(origins.first)
        #expect(origin.scheme == "https")
        #expect(origin.host == "xn--bcher-kva.example")
        #expect(origin.port == 443)
        #expect(origin.isSecure)
        #expect(origin.authority == "xn--bcher-kva.example")
        #expect(origin.description == "https://xn--bcher-kva.example:443")
        #expect(try Origin(scheme: "http", host: "bücher.example", port: nil) != origin, "another scheme")
        #expect(try Origin(scheme: "https", host: "bücher.example", port: 8443) != origin, "another port")
    }

    @Test("IP literals, authority and description")
    func literals() throws {
        let v6 = try Origin(scheme: "http", host: "[0:0::1]", port: 8080)
        #expect(v6.host == "::1")
        #expect(v6.authority == "[::1]:8080")
        #expect(v6.description == "http://[::1]:8080")
        #expect(!v6.isSecure)
        #expect(try Origin(scheme: "http", host: "::1", port: 80).authority == "[::1]")
        #expect(try Origin(scheme: "https", host: "1.2.3.4.", port: nil).host == "1.2.3.4")
    }

    @Test("refusals")
    func refusals() {
        func code(_ scheme: String, _ host: String, _ port: Int?) -> URLReadingError.Code? {
            do throws(URLReadingError) {
                _ = try Origin(scheme: scheme, host: host, port: port)
                return nil
            } catch {
                return error.code
            }
        }
        #expect(code("ftp", "a.example", nil) == .unsupportedScheme)
        #expect(code("wss", "a.example", nil) == .unsupportedScheme)
        #expect(code("https", "", nil) == .missingHost)
        #expect(code("https", "127.1", nil) == .invalidHost)
        #expect(code("https", "a%2eb", nil) == .invalidHost)
        #expect(code("https", "a.example", 0) == .invalidPort)
        #expect(code("https", "a.example", 65536) == .invalidPort)
        #expect(code("https", "a.example", 65535) == nil)
        let error = #expect(throws: URLReadingError.self) { try Origin(scheme: "https", host: "0x7f.0.0.1", port: nil) }
        #expect(error?.hostError?.code == .invalidIPv4)
        #expect(error?.host == "0x7f.0.0.1")
    }

    @Test("the origin of a Foundation URL")
    func foundationURLs() throws {
        #expect(try Origin(url("https://b%C3%BCcher.example/x")).host == "xn--bcher-kva.example")
        #expect(try Origin(url("HTTP://Example.COM.:8080")).description == "http://example.com:8080")
        let relative = try #require(URL(string: "x", relativeTo: url("https://a.example/v1/")))
        #expect(try Origin(relative).host == "a.example")
        for (text, expected) in [
            ("/relative", URLReadingError.Code.unsupportedScheme), ("mailto:a@b.example", .unsupportedScheme),
            ("https:///x", .missingHost), ("https://a.example:99999/", .invalidPort), ("https://127.1/", .invalidHost),
        ] {
            let error = #expect(throws: URLReadingError.self, "\(text)") { try Origin(url(text)) }
            #expect(error?.code == expected, "\(text)")
        }
    }

    @Test("the raw host of a Foundation URL: non-ASCII escapes decoded, ASCII escapes kept")
    func rawHost() throws {
        #expect(Origin.rawHost(of: url("https://bücher.example/")) == "bücher.example")
        #expect(Origin.rawHost(of: url("https://b%C3%BCcher.example/")) == "bücher.example")
        #expect(Origin.rawHost(of: url("https://a%2eb.example/")) == "a%2eb.example")
        #expect(Origin.rawHost(of: url("https://b%FFcher.example/")) == "b%FFcher.example", "not UTF-8")
        #expect(Origin.rawHost(of: url("https://[::1]:8443/")) == "::1")
        #expect(Origin.rawHost(of: url("/relative")) == nil)
    }

    @Test("default ports")
    func defaultPorts() {
        #expect(Origin.defaultPort(for: "HTTPS") == 443)
        #expect(Origin.defaultPort(for: "wss") == 443)
        #expect(Origin.defaultPort(for: "http") == 80)
        #expect(Origin.defaultPort(for: "ws") == 80)
        #expect(Origin.defaultPort(for: "ftp") == nil)
        #expect(HostAllowlist.defaultPort(for: "https") == 443)
    }
}
