import Foundation
import SystemCalls
import WorkerProtocol

/// The loop of a `stackline-worker --parse` child: a parse request frame in on `input`, a
/// parse reply frame out on `output`, until the input ends.
public enum ParseService {
    /// Address space a parse child may use. The largest report (`ReportLimits.maxReportBytes`)
    /// and what its parse builds fit with room to spare; the hostile-input tests parse every
    /// shape under 1 GiB.
    public static let addressSpaceLimit = 4 << 30

    public enum Failure: Error, CustomStringConvertible {
        case read(FrameError)
        case write(FrameError)
        case frame(JobFrameError)

        public var description: String {
            switch self {
            case .read(let error): "cannot read a parse request: \(error)"
            case .write(let error): "cannot write a parse reply: \(error)"
            case .frame(let error): "not a parse request: \(error)"
            }
        }
    }

    /// Serves until `input` ends (returns) or the parent goes away (throws). `beforeParse` sees
    /// each input first (the worker's test hooks: a marker that crashes or hangs the child).
    public static func serve(
        input: Int32, output: Int32, parser: InProcessParser = InProcessParser(), beforeParse: (Data) -> Void = { _ in }
    ) throws(Failure) {
        let reader = FrameReader(fd: input)
        // Replies to the inputs of one write (`ParserPool` sends several at once) leave in one
        // write too: one wakeup of the parent per batch, not per report.
        var replies: [Data] = []
        while true {
            let frame: Data?
            do { frame = try reader.read() } catch .endOfStream { return } catch { throw .read(error) }
            guard let frame else { continue }
            let request: Data
            do { request = try ParseRequest.input(frame: frame) } catch { throw .frame(error) }
            var reply: Data
            beforeParse(request)
            do { reply = try parser.parse(request).encodedFrame() } catch {
                // Parts over the frame limit: the input could never be stored anyway.
                reply = (try? ParseReply.refused(ParseRefusal("the parsed reports do not fit in one reply frame: \(error)")).encodedFrame()) ?? Data()
            }
            replies.append(reply)
            guard !reader.hasBufferedFrame else { continue }
            do { try Framing.write(bundled: Framing.bundle(replies), to: output) } catch { throw .write(error) }
            replies.removeAll(keepingCapacity: true)
        }
    }
}
