import Foundation
import Logging
import ReportModel
import ServiceRuntime
import SystemCalls
import WorkerProtocol

/// `serve`'s parser: every input is parsed in a `stackline-worker --parse` child, so a parser
/// defect (a Swift trap cannot be caught), a runaway allocation or a parse that never ends costs
/// one child and one request, never the server. Symbolicator and Socorro isolate their
/// stackwalkers for the same reason; the master already isolates symbolication in workers.
///
/// Children are started on demand, up to `size`, and kept across requests: a spawn per
/// request would cost more than the parse. Under load, the thread that gets a child carries
/// every input waiting for one, up to half the child's pipe, in one write, and the child
/// answers them in one write: two wakeups per batch instead of two per report (the parse
/// children's share of the server's CPU per accepted report in scripts/bench-serve.sh).
/// `parse` blocks its thread: call it from the blocking-work pool. Children end with `serve`:
/// their input closes when it exits, and they watch their parent besides.
/// Sendable: `lock` guards `idle`, `started` and `waiting`; `configuration` and `logger` are immutable.
public final class ParserPool: ReportParser, @unchecked Sendable {
    public struct Configuration: Sendable {
        /// The worker executable and its arguments; `--parse` is added.
        public var executable: String
        public var arguments: [String]
        /// Children at most, so at most this many parses run at once.
        public var size: Int
        /// A parse that takes longer is killed and its input refused.
        public var timeoutSeconds: Double

        public init(executable: String, arguments: [String] = [], size: Int = 2, timeoutSeconds: Double = 10) {
            self.executable = executable
            self.arguments = arguments
            self.size = max(1, size)
            self.timeoutSeconds = timeoutSeconds
        }
    }

    /// What each child's pipes buffer: room for a batch of ordinary reports in one write.
    static let pipeBytes = 1 << 20

    /// One input waiting for its reply. Its thread sleeps on `wake`, its own, so finishing a
    /// batch wakes the threads of that batch and at most one more (to take the free child), not
    /// every waiting thread.
    private final class Ticket {
        let frame: Data
        var reply: ParseReply?
        /// Its batch's child died or overran before answering it. A child answers a batch in one
        /// write (`ParseService`), so which input was fatal is unknown: each goes again alone,
        /// and only the one that is fatal alone is refused.
        var alone = false
        let wake = DispatchSemaphore(value: 0)
        init(frame: Data) { self.frame = frame }
    }

    /// A child and whether it has answered yet: a child that cannot even take its first batch
    /// refuses that batch's first input, so a broken worker binary cannot loop spawning.
    private struct Child {
        let process: WorkerProcess
        var answered = false
    }

    private let configuration: Configuration
    private let logger: Logger
    // Guards every var below.
    private let lock = NSLock()
    private var idle: [Child] = []
    private var started = 0
    /// Inputs no child has taken yet, oldest first.
    private var waiting: [Ticket] = []

    public init(_ configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        SystemCall.ignoreBrokenPipes()
    }

    public func parse(_ input: Data) -> ParseReply {
        let ticket: Ticket
        do { ticket = Ticket(frame: try ParseRequest.encodedFrame(input)) } catch {
            return .refused(ParseRefusal("the report does not fit in a parse frame: \(error)"))
        }
        lock.lock()
        defer { lock.unlock() }
        waiting.append(ticket)
        while ticket.reply == nil {
            // Another thread carries this input in its batch: its reply, or its return to
            // `waiting` as the oldest input, wakes this thread. Taking a child now would spin.
            guard waiting.contains(where: { $0 === ticket }) else {
                lock.unlock()
                ticket.wake.wait()
                lock.lock()
                continue
            }
            var child: Child
            do {
                guard let free = try checkOutLocked() else {
                    lock.unlock()
                    ticket.wake.wait()
                    lock.lock()
                    continue
                }
                child = free
            } catch {
                waiting.removeAll { $0 === ticket }
                wakeNextLocked()
                logger.error("cannot start a parse child", metadata: ["error": "\(error)"])
                return .refused(ParseRefusal("the server cannot parse right now (\(error)); send the report again later"))
            }
            let batch = takeBatchLocked(limit: child.process.sendAheadLimit)
            lock.unlock()
            if batch.count > 1 { logger.debug("parse batch", metadata: ["inputs": "\(batch.count)"]) }
            let (replies, healthy) = exchange(batch.map(\.frame), with: child)
            lock.lock()
            for (n, reply) in replies.enumerated() { batch[n].reply = reply }
            // Inputs the child never answered go first to the next child, each alone.
            for unanswered in batch[replies.count...] { unanswered.alone = true }
            waiting.insert(contentsOf: batch[replies.count...], at: 0)
            if healthy {
                child.answered = true
                idle.append(child)
            } else {
                started -= 1
            }
            for done in batch where done !== ticket && done.reply != nil { done.wake.signal() }
            wakeNextLocked()
        }
        return ticket.reply ?? .refused(ParseRefusal("no parse reply"))
    }

    /// Wakes the thread of the oldest waiting input when a child is free to take it.
    private func wakeNextLocked() {
        guard let next = waiting.first, !idle.isEmpty || started < configuration.size else { return }
        next.wake.signal()
    }

    /// An idle child, a new one while fewer than `size` run, or nil: all are busy. An idle child
    /// that has died is found when its batch cannot be sent (`exchange`), not by asking the
    /// kernel here: a `waitpid` per upload showed in scripts/bench-serve.sh's profile.
    private func checkOutLocked() throws -> Child? {
        if let child = idle.popLast() { return child }
        guard started < configuration.size else { return nil }
        let process = try WorkerProcess(
            executable: configuration.executable, arguments: configuration.arguments + ["--parse"], pipeBytes: Self.pipeBytes)
        started += 1
        return Child(process: process)
    }

    /// The oldest waiting inputs whose frames fit in `limit` bytes together (at least one): a
    /// write of that much to the child's empty pipe never blocks, so the parent is never stuck
    /// writing while the child is stuck writing replies the parent is not yet reading.
    private func takeBatchLocked(limit: Int) -> [Ticket] {
        var bytes = 0
        var count = 0
        for ticket in waiting {
            let size = ticket.frame.count + 4
            guard count == 0 || (size <= limit - bytes && !ticket.alone) else { break }
            if ticket.alone { count = 1; break }
            bytes += size  // overflow: frames held in memory, each under the frame limit
            count += 1
        }
        let batch = Array(waiting.prefix(count))
        waiting.removeFirst(count)
        return batch
    }

    /// Sends the frames in one write and reads one reply each, in order. Returns the replies
    /// read and whether the child is still usable. After a child dies or overruns its deadline,
    /// a lone input is refused; in a batch, the replies stop there and the unanswered inputs go
    /// again alone (the child writes a batch's replies together, so the fatal one is unknown).
    private func exchange(_ frames: [Data], with slot: Child) -> ([ParseReply], healthy: Bool) {
        let child = slot.process
        let timeoutMs = Int32(clamping: Int.clamping(configuration.timeoutSeconds * 1000))
        do {
            try child.send(frames: frames)
        } catch {
            retire(child, why: "\(error)")
            // A child that had answered before died between batches, through no fault of these
            // inputs: they go to the next child. One that never answered refuses the first.
            guard !slot.answered else { return ([], false) }
            logger.error("a new parse child could not take its first input", metadata: ["error": "\(error)"])
            return ([.refused(ParseRefusal("the parse process could not start; send the report again later"))], false)
        }
        var replies: [ParseReply] = []
        replies.reserveCapacity(frames.count)
        for frame in frames {
            do {
                // Each reply within the deadline of the one before: the child parses in order.
                guard let replyFrame = try child.reader.read(timeoutMs: timeoutMs) else {
                    logger.warning("parse timed out; child killed", metadata: ["seconds": "\(configuration.timeoutSeconds)", "bytes": "\(frame.count)"])
                    retire(child, why: "timeout")
                    guard frames.count == 1 else { return (replies, false) }
                    replies.append(.refused(ParseRefusal(
                        "parsing this report took longer than \(configuration.timeoutSeconds) s; it was stopped and nothing was stored")))
                    return (replies, false)
                }
                replies.append(try ParseReply(frame: replyFrame))
            } catch let error as FrameError {
                // The child ended mid-parse: this input made a parser trap or run out of memory.
                let exit = retire(child, why: "\(error)")
                logger.error("parse child died on a report", metadata: ["exit": "\(exit)", "bytes": "\(frame.count)"])
                guard frames.count == 1 else { return (replies, false) }
                replies.append(.refused(ParseRefusal(
                    "the parser stopped on this report (\(exit)); nothing was stored. It is malformed in a way the parser does not handle; please report it with the file")))
                return (replies, false)
            } catch {
                retire(child, why: "unreadable reply")
                logger.error("parse child sent an unreadable reply", metadata: ["error": "\(error)"])
                replies.append(.refused(ParseRefusal("the parser's answer was unreadable (\(error)); nothing was stored")))
                return (replies, false)
            }
        }
        return (replies, true)
    }

    @discardableResult
    private func retire(_ child: WorkerProcess, why: String) -> WorkerExit {
        child.kill()
        return child.wait(upTo: 1)
    }
}
