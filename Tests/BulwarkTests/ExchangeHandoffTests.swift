import Testing

@testable import Bulwark

/// The handoff of an exchange's result from the event loop to the waiting task, in every order of the two sides.
@Suite("Exchange handoff")
struct ExchangeHandoffTests {
    struct Failure: Error, Equatable {
        let name: String
    }

    @Test func aResultCompletedBeforeTheWaitIsTakenAtOnce() async throws {
        let handoff = ExchangeHandoff<Int>()
        handoff.complete(.success(1))
        let value = try await handoff.value()
        #expect(value == 1)
    }

    @Test func aWaitingTaskIsResumedByTheResult() async throws {
        let handoff = ExchangeHandoff<Int>()
        async let value = handoff.value()
        try await Task.sleep(for: .milliseconds(20))
        handoff.complete(.success(2))
        let received = try await value
        #expect(received == 2)
    }

    @Test func theFirstResultWins() async throws {
        let handoff = ExchangeHandoff<Int>()
        handoff.complete(.failure(Failure(name: "first")))
        handoff.complete(.success(3))
        handoff.abandon(Failure(name: "abandoned"))
        await #expect(throws: Failure(name: "first")) { try await handoff.value() }
    }

    @Test func abandoningBeforeTheExchangeStartedEndsTheWait() async throws {
        let handoff = ExchangeHandoff<Int>()
        async let value = handoff.value()
        try await Task.sleep(for: .milliseconds(20))
        handoff.abandon(Failure(name: "cancelled"))
        // The exchange's own result, later, changes nothing.
        handoff.complete(.success(4))
        do {
            let received = try await value
            Issue.record("expected the wait to fail, got \(received)")
        } catch {
            #expect(error as? Failure == Failure(name: "cancelled"))
        }
    }

    @Test func abandoningOnceTheExchangeStartedLeavesTheWaitToTheExchange() async throws {
        let handoff = ExchangeHandoff<Int>()
        handoff.exchangeStarted()
        handoff.abandon(Failure(name: "cancelled"))
        async let value = handoff.value()
        try await Task.sleep(for: .milliseconds(20))
        // The exchange, failed by the cancellation, reports its own failure.
        handoff.complete(.failure(Failure(name: "exchange failed")))
        do {
            let received = try await value
            Issue.record("expected the wait to fail, got \(received)")
        } catch {
            #expect(error as? Failure == Failure(name: "exchange failed"))
        }
    }

    @Test func abandoningAWaitingTaskOnceStartedDoesNotResumeIt() async throws {
        let handoff = ExchangeHandoff<Int>()
        async let value = handoff.value()
        try await Task.sleep(for: .milliseconds(20))
        handoff.exchangeStarted()
        handoff.abandon(Failure(name: "cancelled"))
        handoff.complete(.success(5))
        let received = try await value
        #expect(received == 5)
    }
}
