import Foundation
import Hashing
import ReportModel

extension GroupKey {
    /// A key for `frames`; the fingerprint hashes kind, rules version, the app and the frames, so a
    /// rules change can never silently merge or split groups, and two programs never share one.
    public init(kind: ReportKind, title: String, rulesVersion: Int, app: String?, frames: [String]) {
        // The fields joined by newlines, written straight into the bytes that are hashed (an
        // array of them, a joined String and a Data copy were made for every report).
        var text = Array("stackline-group".utf8)
        // overflow: lengths of strings held in memory, so their sum is bounded by the address space
        text.reserveCapacity(64 + (app?.utf8.count ?? 0) + frames.reduce(0) { $0 &+ $1.utf8.count &+ 1 })
        func add(_ field: String) {
            text.append(UInt8(ascii: "\n"))
            text.append(contentsOf: field.utf8)
        }
        add(kind.rawValue)
        add("rules-v\(rulesVersion)")
        add("app:\(app ?? "")")
        for frame in frames { add(frame) }
        self.init(
            fingerprint: String(SHA256.hex(text).prefix(32)), kind: kind, title: title,
            rulesVersion: rulesVersion, frames: frames)
    }
}

/// One frame (inline level) reduced to what groups it.
struct FrameSignature {
    /// `image!function`, or `image+0xoffset` when the frame has no symbol.
    var signature: String
    var inApp: Bool
    /// For titles: the normalised function and the source file (its basename is taken only
    /// for the one frame a title shows).
    var function: String?
    var file: String?
    var image: String

    init?(_ frame: SymbolicatedFrame) {
        guard let imageName = frame.image else { return nil }
        image = basename(imageName)
        inApp = frame.inApp ?? false
        if let name = frame.function ?? frame.symbol, !name.isEmpty {
            let normalized = FunctionNormalizer.normalize(name, symbol: frame.symbol)
            function = normalized
            signature = "\(image)!\(normalized)"
            file = frame.file
        } else {
            // Same build, same code: the offset inside the image is stable across launches.
            let offset = frame.imageOffset?.value ?? 0
            signature = "\(image)+0x\(String(offset, radix: 16))"
        }
    }

    /// `func — file`, `func — image` or `image+0x…` for titles.
    var display: String {
        guard let function else { return signature }
        return "\(function) — \(file.map(basename) ?? image)"
    }
}

/// Frame selection shared by crash fingerprints and lag keys: collapse recursion, prefer
/// in-app frames, keep at most `maxFrames`.
enum FrameSelection {
    /// One pass that stops at the `maxFrames`th in-app frame, since no later frame can change
    /// the answer: a deep stack's bottom is never signed (signing every frame showed in a
    /// worker's profile under scripts/bench-queue.sh on 30-frame crashes).
    static func decide(_ frames: some Sequence<SymbolicatedFrame>, maxFrames: Int) -> [FrameSignature] {
        guard maxFrames > 0 else { return [] }
        var inApp: [FrameSignature] = []
        // The collapsed frames' first `maxFrames`, the answer only while no frame is in-app.
        var all: [FrameSignature] = []
        var previous: String?
        for frame in frames {
            guard let signature = FrameSignature(frame), signature.signature != previous else { continue }
            previous = signature.signature
            if signature.inApp {
                inApp.append(signature)
                if inApp.count == maxFrames { break }
            } else if inApp.isEmpty && all.count < maxFrames {
                all.append(signature)
            }
        }
        return inApp.isEmpty ? all : inApp
    }
}
