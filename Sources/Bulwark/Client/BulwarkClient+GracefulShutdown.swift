import NIOCore

extension BulwarkClient {
    /// Shuts the client down gracefully: new requests fail at once with ``BulwarkError/Code/clientShutdown``, the
    /// requests in flight go on until they finish — response bodies included, so a response being read is read to
    /// its end — for at most `gracePeriod`, and those still running then fail with
    /// ``BulwarkError/Code/clientShutdown``, as if cancelled. Then the client shuts down as ``shutdown()`` does.
    ///
    /// A response whose body is neither read to its end nor dropped keeps its request in flight until the grace
    /// period ends. Cancelling the calling task ends the grace period at once.
    ///
    /// This is what a `swift-service-lifecycle` service runs on graceful shutdown (see the
    /// `BulwarkServiceLifecycle` product). Does nothing for ``shared``, which lives as long as the process.
    public func shutdown(gracePeriod: TimeAmount) async {
        guard !self.isShared else { return }
        self.inFlight.beginDraining()
        let drained = await self.inFlight.drained(before: .now() + gracePeriod)
        if !drained {
            self.inFlight.cancelAll(
                BulwarkError(.clientShutdown, host: nil, detail: "the client shut down before the request finished")
            )
        }
        await self.shutdown()
    }
}
