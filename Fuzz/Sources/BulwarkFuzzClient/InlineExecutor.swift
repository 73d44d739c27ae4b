import Synchronization

/// Runs a task's jobs on the thread that drains it: the fuzz callback's thread, which is the one thread an
/// `EmbeddedEventLoop` accepts. The response body is an async sequence; reading it in a task on this executor lets
/// its demand reach the exchange handler on the loop's thread, in the order the harness chooses.
final class InlineExecutor: TaskExecutor {
    private let jobs = Mutex<[UnownedJob]>([])

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        self.jobs.withLock { $0.append(job) }
    }

    /// Runs the jobs queued so far and those they queue; returns whether any ran.
    func drain() -> Bool {
        var ran = false
        while let job = self.jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
            ran = true
        }
        return ran
    }
}
