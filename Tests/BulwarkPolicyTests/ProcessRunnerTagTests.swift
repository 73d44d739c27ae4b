import BulwarkTestHelpers
import Foundation
import Testing

/// The tests' process runner refuses, as a recorded issue, a program started by a suite without the `.externalPeers`
/// tag: such a suite would run among the in-process client tests (scripts/test selects processes by tag).
///
/// This is the one untagged suite that starts a program, on purpose: `/bin/true`, which opens nothing.
@Suite("The process runner checks the external-peers tag")
struct ProcessRunnerTagTests {
    @Test func anUntaggedTestThatStartsAProgramRecordsAnIssue() async throws {
        let recorded = SharedBox<[String]>([])
        try await withKnownIssue("the runner must flag an untagged test that starts a program") {
            let result = try await ProcessRunner.run(URL(fileURLWithPath: "/bin/true"), [])
            #expect(result.status == 0)
        } matching: { issue in
            recorded.append(issue.comments.map(\.rawValue).joined())
            return true
        }
        let messages = recorded.value
        #expect(messages.count == 1)
        #expect(messages.first?.contains("not tagged .externalPeers") == true, "\(messages)")
    }
}
