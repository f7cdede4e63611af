import Foundation
import Logging
import SystemCalls
import WorkerProtocol

/// `serve`'s parser: every input is parsed in a `stackline-worker --parse` child, so a parser
/// defect (a Swift trap cannot be caught), a runaway allocation or a parse that never ends costs
/// one child and one request, never the server. Symbolicator and Socorro isolate their
/// stackwalkers for the same reason; the master already isolates symbolication in workers.
///
/// Children are started on demand, up to `size`, and kept across requests: a spawn per
/// request would cost more than the parse (scripts/bench-serve.sh measures the endpoint).
/// `parse` blocks its thread: call it from the blocking-work pool.
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

    private let configuration: Configuration
    private let logger: Logger
    // Guards `idle` and `started`; waiters sleep on it until a child is handed back.
    private let condition = NSCondition()
    private var idle: [WorkerProcess] = []
    private var started = 0

    public init(_ configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        SystemCall.ignoreBrokenPipes()
    }

    public func parse(_ input: Data) -> ParseReply {
        let frame: Data
        do { frame = try ParseRequest.encodedFrame(input) } catch {
            return .refused(ParseRefusal("the report does not fit in a parse frame: \(error)"))
        }
        let child: WorkerProcess
        do { child = try checkOut() } catch {
            logger.error("cannot start a parse child", metadata: ["error": "\(error)"])
            return .refused(ParseRefusal("the server cannot parse right now (\(error)); send the report again later"))
        }
        switch exchange(frame, with: child) {
        case .success(let reply):
            checkIn(child)
            return reply
        case .failure(let refusal):
            retire(child)
            return .refused(refusal)
        }
    }

    /// Closes every idle child's input (each exits when it ends); a child still parsing is
    /// retired when its parse returns.
    public func shutdown() {
        condition.lock()
        let children = idle
        idle = []
        started -= children.count
        condition.unlock()
        for child in children {
            child.closeInput()
            _ = child.wait(upTo: 1)
        }
    }

    private func exchange(_ frame: Data, with child: WorkerProcess) -> Result<ParseReply, ParseRefusal> {
        do {
            try child.send(frame)
            let timeoutMs = Int32(clamping: Int((configuration.timeoutSeconds * 1000).rounded(.up)))
            guard let replyFrame = try child.reader.read(timeoutMs: timeoutMs) else {
                child.kill()
                logger.warning("parse timed out; child killed", metadata: ["seconds": "\(configuration.timeoutSeconds)", "bytes": "\(frame.count)"])
                return .failure(ParseRefusal("parsing this report took longer than \(configuration.timeoutSeconds) s; it was stopped and nothing was stored"))
            }
            return .success(try ParseReply(frame: replyFrame))
        } catch let error as FrameError {
            // The child ended mid-parse: this input made a parser trap or run out of memory.
            child.kill()
            let exit = child.wait(upTo: 1)
            logger.error("parse child died on a report", metadata: ["exit": "\(exit)", "bytes": "\(frame.count)", "error": "\(error)"])
            return .failure(ParseRefusal("the parser stopped on this report (\(exit)); nothing was stored. It is malformed in a way the parser does not handle; please report it with the file"))
        } catch {
            child.kill()
            logger.error("parse child sent an unreadable reply", metadata: ["error": "\(error)"])
            return .failure(ParseRefusal("the parser's answer was unreadable (\(error)); nothing was stored"))
        }
    }

    private func checkOut() throws -> WorkerProcess {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let child = idle.popLast() {
                if child.poll() == nil { return child }
                started -= 1
                continue
            }
            if started < configuration.size {
                let child = try WorkerProcess(executable: configuration.executable, arguments: configuration.arguments + ["--parse"])
                started += 1
                return child
            }
            condition.wait()
        }
    }

    private func checkIn(_ child: WorkerProcess) {
        condition.lock()
        idle.append(child)
        condition.signal()
        condition.unlock()
    }

    private func retire(_ child: WorkerProcess) {
        child.kill()
        _ = child.wait(upTo: 1)
        condition.lock()
        started -= 1
        condition.signal()
        condition.unlock()
    }
}
