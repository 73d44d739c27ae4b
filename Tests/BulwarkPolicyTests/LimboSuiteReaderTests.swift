import Foundation
import Testing

@testable import BulwarkLimbo

@Suite("x509-limbo suite reader")
struct LimboSuiteReaderTests {
    static func testCase(
        _ id: String,
        pem: String = "-----BEGIN CERTIFICATE-----\\nAAAA\\n-----END CERTIFICATE-----\\n"
    )
        -> String
    {
        """
        {"id": "\(id)", "features": ["a", "b"], "validation_kind": "SERVER", "trusted_certs": ["\(pem)"],
         "untrusted_intermediates": [], "peer_certificate": "\(pem)", "validation_time": null,
         "key_usage": [], "extended_key_usage": ["serverAuth"], "expected_result": "FAILURE",
         "expected_peer_name": {"kind": "DNS", "value": "x.test"}, "max_chain_depth": 3,
         "nested": {"a": [1, 2.5e3, true, false, null, "}]\\"[{"]}, "description": "quote \\" and \\\\ and \\u00e9"}
        """
    }

    static func suite(_ count: Int, versionFirst: Bool = true) -> Data {
        let cases = (0..<count).map { Self.testCase("case::\($0)") }.joined(separator: " ,\n ")
        let text =
            versionFirst
            ? "{\"version\": 1, \"testcases\": [\(cases)] }\n" : "{ \"testcases\" : [ \(cases) ], \"version\":1}"
        return Data(text.utf8)
    }

    @Test(arguments: [0, 1, 255, 256, 257, 1000])
    func decodesLikeJSONDecoderInOrder(count: Int) async throws {
        for versionFirst in [true, false] {
            let data = Self.suite(count, versionFirst: versionFirst)
            let expected = try JSONDecoder().decode(LimboFile.self, from: data).testcases
            for concurrency in [1, 4] {
                let cases = try await LimboSuiteReader.testCases(from: data, concurrency: concurrency)
                #expect(cases == expected)
                #expect(cases.map(\.id) == (0..<count).map { "case::\($0)" })
            }
            let ranges = data.withUnsafeBytes { LimboSuiteReader.testCaseRanges(in: $0) }
            #expect(ranges?.count == count)
        }
    }

    @Test(arguments: [
        "", "[]", "{}", "{\"testcases\": []}", "{\"version\": 1, \"testcases\": [{\"id\": \"x\"}",
        "{\"version\": 1, \"testcases\": [\"unterminated]}", "{\"version\": 1} trailing",
    ])
    func unsplittableInputIsDecodedWholeAndFailsTheSameWay(text: String) async {
        let data = Data(text.utf8)
        #expect(data.withUnsafeBytes { LimboSuiteReader.testCaseRanges(in: $0) }?.isEmpty ?? true)
        await #expect(throws: (any Error).self) { try await LimboSuiteReader.testCases(from: data, concurrency: 2) }
    }

    @Test func theRealSuiteDecodesLikeJSONDecoder() async throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(LimboRunner.defaultPath).path
        guard FileManager.default.fileExists(atPath: path) else { return }
        let data = try Data(contentsOf: URL(fileURLWithPath: path), options: .mappedIfSafe)
        let expected = try JSONDecoder().decode(LimboFile.self, from: data).testcases
        let cases = try await LimboSuiteReader.testCases(from: data, concurrency: 2)
        #expect(cases.count == expected.count)
        #expect(cases == expected)
    }
}
