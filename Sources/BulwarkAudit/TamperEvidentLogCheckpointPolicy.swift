extension TamperEvidentLog {
    /// When a ``TamperEvidentLog`` writes a checkpoint besides the one on ``TamperEvidentLog/close()``.
    ///
    /// A checkpoint is a signed entry of the chain that states how many entries stand before it (`count`) and the
    /// `hash` of the last of them (`head`). Periodic checkpoints bound how much of a running log is not yet covered
    /// by one, and each can be copied elsewhere as an anchor for `bulwark log verify --expect-count/--expect-head`.
    public struct CheckpointPolicy: Sendable, Hashable {
        /// A checkpoint after this many records since the last one; nil for none by count.
        public var everyRecords: Int?
        /// A checkpoint this long after the last one, if records were written since; nil for none by time.
        public var interval: Duration?

        /// Checkpoints every `everyRecords` records and every `interval` (only when records were written since the
        /// last checkpoint), and on close.
        public init(everyRecords: Int? = 1000, every interval: Duration? = .seconds(60)) {
            self.everyRecords = everyRecords.map { max(1, $0) }
            self.interval = interval.map { max($0, .milliseconds(10)) }
        }

        /// Every 1,000 records or 60 seconds, and on close.
        public static let `default` = CheckpointPolicy()
        /// Only on close.
        public static let onlyOnClose = CheckpointPolicy(everyRecords: nil, every: nil)
    }
}
