import Foundation
import Hashing
import ReportModel

extension GroupKey {
    /// A key for `frames`; the fingerprint hashes kind, rules version, the app and the frames, so a
    /// rules change can never silently merge or split groups, and two programs never share one.
    public init(kind: ReportKind, title: String, rulesVersion: Int, app: String?, frames: [String]) {
        let text = (["stackline-group", kind.rawValue, "rules-v\(rulesVersion)", "app:\(app ?? "")"] + frames)
            .joined(separator: "\n")
        self.init(
            fingerprint: String(SHA256.hex(Data(text.utf8)).prefix(32)), kind: kind, title: title,
            rulesVersion: rulesVersion, frames: frames)
    }
}

/// One frame (inline level) reduced to what groups it.
struct FrameSignature: Equatable {
    /// `image!function`, or `image+0xoffset` when the frame has no symbol.
    var signature: String
    var inApp: Bool
    /// For titles: the normalised function and the source file's basename.
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
            file = frame.file.map(basename)
        } else {
            // Same build, same code: the offset inside the image is stable across launches.
            let offset = frame.imageOffset?.value ?? 0
            signature = "\(image)+0x\(String(offset, radix: 16))"
        }
    }

    /// `func — file`, `func — image` or `image+0x…` for titles.
    var display: String {
        guard let function else { return signature }
        return "\(function) — \(file ?? image)"
    }
}

/// Frame selection shared by crash fingerprints and lag keys: collapse recursion, prefer
/// in-app frames, keep at most `maxFrames`.
enum FrameSelection {
    static func decide(_ frames: [FrameSignature], maxFrames: Int) -> [FrameSignature] {
        var collapsed: [FrameSignature] = []
        for frame in frames where collapsed.last?.signature != frame.signature {
            collapsed.append(frame)
        }
        let inApp = collapsed.filter(\.inApp)
        return Array((inApp.isEmpty ? collapsed : inApp).prefix(maxFrames))
    }
}
