import Foundation
import Testing

@testable import Bulwark

/// ``BulwarkError`` is equal and hashed by code, as AsyncHTTPClient's `HTTPClientError`, and records where in Bulwark
/// it was made without ever printing that place.
@Suite struct BulwarkErrorTests {
    @Test func errorsWithTheSameCodeAreEqualWhateverTheirDetails() {
        let one = BulwarkError(.readTimeout, host: "a.bulwark.test", detail: "after 5 s")
        let other = BulwarkError(.readTimeout, host: "b.bulwark.test", underlying: "library error 42")
        #expect(one == other)
        #expect(one.hashValue == other.hashValue)
        #expect(one != BulwarkError(.connectTimeout, host: "a.bulwark.test", detail: "after 5 s"))
        let errors: Set<BulwarkError> = [one, other, BulwarkError(.cancelled, host: nil)]
        #expect(errors.count == 2)
        #expect(Set(errors.map(\.code)) == [.readTimeout, .cancelled])
    }

    @Test func theFileAndLineAreWhereTheErrorWasMade() {
        let line: UInt = #line + 1
        let error = BulwarkError(.cancelled, host: nil)
        #expect(error.file == #fileID)
        #expect(error.line == line)
    }

    /// An error made by the client records the place in Bulwark's sources that made it, not the caller's.
    @Test func anErrorFromTheClientRecordsItsPlaceInBulwark() async throws {
        let client = try BulwarkClient(configuration: .init(trust: try ServerTrustManager(evaluators: [:])))
        var caught: BulwarkError?
        do {
            _ = try await client.execute(try BulwarkRequest(url: "ftp://api.bulwark.test/file"))
        } catch let error as BulwarkError {
            caught = error
        }
        try await client.shutdown()
        let error = try #require(caught)
        #expect(error.code == .invalidURL)
        #expect(error.file.hasPrefix("Bulwark/"), "\(error.file)")
        #expect(error.file != #fileID)
        // The recorded line of the recorded file makes the error.
        let name = try #require(error.file.split(separator: "/").last.map(String.init))
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../Sources/Bulwark"
        ).standardizedFileURL
        let enumerator = try #require(FileManager.default.enumerator(atPath: sources.path))
        let paths = enumerator.compactMap { $0 as? String }
        let relative = try #require(paths.first { $0 == name || $0.hasSuffix("/" + name) })
        let text = try String(contentsOf: sources.appendingPathComponent(relative), encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let source = try #require(error.line >= 1 && error.line <= lines.count ? lines[Int(error.line) - 1] : nil)
        #expect(source.contains("BulwarkError"), "\(relative):\(error.line): \(source)")
    }

    @Test func theFileAndLineAreNeverInTheErrorText() {
        let errors = [
            BulwarkError(.readTimeout, host: "a.bulwark.test", detail: "after 5 s", underlying: "library error"),
            BulwarkError(.cancelled, host: nil),
        ]
        for error in errors {
            for text in [error.description, error.debugDescription, "\(error)", String(reflecting: error)] {
                #expect(!text.contains(error.file), "\(text)")
                #expect(!text.contains(".swift"), "\(text)")
                #expect(!text.contains(":\(error.line)"), "\(text)")
            }
        }
    }
}
