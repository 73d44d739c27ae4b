import Foundation
import Testing

@testable import BulwarkPolicy

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("IP address literals")
struct IPAddressTests {
    @Test("IPv4: only the strict dotted quad")
    func ipv4() throws {
        #expect(IPAddress("127.0.0.1")?.bytes == [127, 0, 0, 1])
        #expect(IPAddress("0.0.0.0")?.bytes == [0, 0, 0, 0])
        #expect(IPAddress("255.255.255.255")?.bytes == [255, 255, 255, 255])
        #expect(IPAddress("192.0.2.1")?.isIPv4 == true)
        for text in [
            "", "1.2.3", "1.2.3.4.5", "1..2.3", "256.0.0.1", "01.2.3.4", "1.2.3.04", "127.1", "2130706433",
            "0x7f.0.0.1", "0177.0.0.1", " 1.2.3.4", "1.2.3.4 ", "1.2.3.4.", "1.2.3.-4", "1.2.3.4/8", "a.b.c.d",
        ] {
            #expect(IPAddress(text) == nil, "\(text.debugDescription)")
        }
    }

    @Test("IPv6: every valid spelling, in RFC 5952 form")
    func ipv6() throws {
        let cases: [(String, String)] = [
            ("::", "::"),
            ("::1", "::1"),
            ("0:0:0:0:0:0:0:1", "::1"),
            ("1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"),
            ("2001:DB8::0:1", "2001:db8::1"),
            ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),
            ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),
            ("1:0:0:0:0:0:0:0", "1::"),
            ("0:0:1:0:0:0:0:1", "0:0:1::1"),
            ("::ffff:192.0.2.1", "::ffff:c000:201"),
            ("1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:102:304"),
            ("0001:0002::", "1:2::"),
        ]
        for (text, canonical) in cases {
            let address = try #require(IPAddress(text), "\(text)")
            #expect(!address.isIPv4)
            #expect(address.bytes.count == 16)
            #expect(address.description == canonical, "\(text)")
            #expect(IPAddress(canonical) == address, "the canonical form reads back")
        }
        for text in [
            ":", ":::", ":1", "1:", "1::2::3", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7", "12345::", "[::1]", "fe80::1%eth0",
            "fe80::1%25eth0", "::ffff:01.2.3.4", "::ffff:1.2.3", "1:2:3:4:5:6:7:1.2.3.4", "::g", "1.2.3.4::",
        ] {
            #expect(IPAddress(text) == nil, "\(text.debugDescription)")
        }
    }

    @Test("bytes round-trip; other lengths are no address")
    func bytes() throws {
        #expect(IPAddress(bytes: [192, 0, 2, 1])?.description == "192.0.2.1")
        let loopback = [UInt8](repeating: 0, count: 15) + [1]
        #expect(IPAddress(bytes: loopback)?.description == "::1")
        #expect(IPAddress(bytes: [1, 2, 3]) == nil)
        #expect(IPAddress(bytes: [UInt8](repeating: 0, count: 5)) == nil)
    }

    /// The test support's certificate factory read addresses with `inet_pton`; on every text it is given (and the
    /// hard cases above) the one parser reads the same bytes, except for spellings `inet_pton` accepts and URLs must
    /// not: none are used for certificates.
    @Test("agrees with inet_pton on dotted quads and IPv6 text")
    func inetPton() {
        let texts = [
            "127.0.0.1", "10.0.0.255", "256.1.1.1", "1.2.3", "01.2.3.4", "::1", "::", "2001:db8::1", "::ffff:10.0.0.1",
            "1:2:3:4:5:6:7:8", "1::2::3", "fe80::1%eth0", "12345::", "::ffff:1.2.3",
        ]
        for text in texts {
            var v4 = in_addr()
            var v6 = in6_addr()
            let expected: [UInt8]?
            if inet_pton(AF_INET, text, &v4) == 1 {
                expected = withUnsafeBytes(of: &v4) { Array($0) }
            } else if inet_pton(AF_INET6, text, &v6) == 1 {
                expected = withUnsafeBytes(of: &v6) { Array($0) }
            } else {
                expected = nil
            }
            #expect(IPAddress(text)?.bytes == expected, "\(text)")
        }
    }

    @Test("host names use the same parser")
    func hostNames() throws {
        #expect(try HostName.canonicalize("[0:0::1]") == IPAddress("::1")?.description)
        #expect(try HostName.canonicalize("[::FFFF:192.0.2.1]") == IPAddress("::ffff:192.0.2.1")?.description)
        #expect(HostName.isIPAddress("192.0.2.1") && HostName.isIPAddress("::1"))
        #expect(!HostName.isIPAddress("example.com") && !HostName.isIPAddress("[::1]"))
    }
}
