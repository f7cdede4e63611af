import JSONFormat

/// A symbolicated report as the JSON a worker sends and `results.symbolicated` stores, written
/// by hand: JSONEncoder cost a worker more than resolving the frames (scripts/bench-queue.sh,
/// 30-frame crashes). The bytes are exactly JSONEncoder's with
/// `.sortedKeys` and `.withoutEscapingSlashes` (`SymbolicatedReportJSONTests`), so what reads
/// them (`JSONDecoder`, SQL's `json_extract`, older rows written by JSONEncoder) sees no
/// difference. Keys are written in sorted order; nil optionals are left out, as synthesized
/// `Encodable` does.
public enum SymbolicatedReportJSON {
    /// Why a report cannot be written as JSON.
    public enum Failure: Error, CustomStringConvertible {
        /// JSONEncoder refuses NaN and infinities; so does this writer.
        case nonFiniteNumber(Double)

        public var description: String {
            switch self {
            case .nonFiniteNumber(let value): "a profile node's costTime is \(value), which JSON cannot hold"
            }
        }
    }

    public static func encode(_ report: SymbolicatedReport) throws(Failure) -> [UInt8] {
        if let lag = report.lag, let bad = lag.profile.first(where: { !$0.node.costTime.isFinite }) {
            throw .nonFiniteNumber(bad.node.costTime)
        }
        // About 350 bytes a frame: reserved once rather than grown (and copied) twice.
        let frames = report.threads.map(\.frames.count).saturatingSum()
        var out = JSONBytes(reservingCapacity: 2048.saturatingAdding(384.saturatingMultiplied(by: frames)))
        write(report, to: &out)
        return out.bytes
    }

    private static func write(_ r: SymbolicatedReport, to out: inout JSONBytes) {
        var first = true
        out.raw("{")
        if let annotations = r.annotations {
            out.key("annotations", first: &first)
            out.array(annotations) { out, annotation in write(annotation, to: &out) }
        }
        if let app = r.app { out.key("app", first: &first); write(app, to: &out) }
        if let arch = r.arch { out.key("arch", first: &first); out.string(arch.name) }
        if let exception = r.exception { out.key("exception", first: &first); write(exception, to: &out) }
        out.key("format", first: &first); out.string(r.format)
        if let id = r.id { out.key("id", first: &first); out.integer(id) }
        // "imageSymbols" sorts before "images" ('S' < 's').
        if let symbols = r.imageSymbols { out.key("imageSymbols", first: &first); out.array(symbols) { out, s in write(s, to: &out) } }
        out.key("images", first: &first); out.array(r.images) { out, image in write(image, to: &out) }
        out.key("kind", first: &first); out.string(r.kind.rawValue)
        if let lag = r.lag { out.key("lag", first: &first); write(lag, to: &out) }
        out.key("missingBuildIds", first: &first); out.array(r.missingBuildIds) { out, id in out.string(id.hex) }
        if let os = r.os { out.key("os", first: &first); out.string(os) }
        out.key("status", first: &first); out.string(r.status.rawValue)
        out.key("threads", first: &first); out.array(r.threads) { out, thread in write(thread, to: &out) }
        if let timestamp = r.timestamp { out.key("timestamp", first: &first); out.string(timestamp) }
        out.key("warnings", first: &first); out.array(r.warnings) { out, warning in out.string(warning) }
        out.raw("}")
    }

    private static func write(_ annotation: ReportAnnotation, to out: inout JSONBytes) {
        var first = true
        out.raw("{")
        out.key("key", first: &first); out.string(annotation.key)
        if let module = annotation.module { out.key("module", first: &first); out.string(module) }
        out.key("value", first: &first); out.string(annotation.value)
        out.raw("}")
    }

    private static func write(_ app: AppInfo, to out: inout JSONBytes) {
        var first = true
        out.raw("{")
        if let build = app.build { out.key("build", first: &first); out.string(build) }
        if let name = app.name { out.key("name", first: &first); out.string(name) }
        if let version = app.version { out.key("version", first: &first); out.string(version) }
        out.raw("}")
    }

    private static func write(_ e: ExceptionInfo, to out: inout JSONBytes) {
        var first = true
        out.raw("{")
        if let code = e.code { out.key("code", first: &first); out.string(code) }
        if let fault = e.faultAddress { out.key("faultAddress", first: &first); out.address(fault) }
        if let message = e.message { out.key("message", first: &first); out.string(message) }
        if let signal = e.signal { out.key("signal", first: &first); out.string(signal) }
        if let type = e.type { out.key("type", first: &first); out.string(type) }
        out.raw("}")
    }

    private static func write(_ image: BinaryImage, to out: inout JSONBytes) {
        var first = true
        out.raw("{")
        if let arch = image.arch { out.key("arch", first: &first); out.string(arch.name) }
        if let id = image.id { out.key("id", first: &first); out.string(id.hex) }
        out.key("loadAddress", first: &first); out.address(image.loadAddress)
        out.key("name", first: &first); out.string(image.name)
        if let path = image.path { out.key("path", first: &first); out.string(path) }
        if let size = image.size { out.key("size", first: &first); out.integer(size) }
        if let vm = image.vmAddress { out.key("vmAddress", first: &first); out.address(vm) }
        out.raw("}")
    }

    private static func write(_ s: ImageSymbols, to out: inout JSONBytes) {
        var first = true
        out.raw("{")
        if let id = s.buildId { out.key("buildId", first: &first); out.string(id.hex) }
        if let detail = s.detail { out.key("detail", first: &first); out.string(detail) }
        out.key("image", first: &first); out.integer(s.image)
        if let name = s.name { out.key("name", first: &first); out.string(name) }
        if let searched = s.searched { out.key("searched", first: &first); out.array(searched) { out, store in out.string(store) } }
        out.key("status", first: &first); out.string(s.status.rawValue)
        out.raw("}")
    }

    private static func write(_ thread: SymbolicatedThread, to out: inout JSONBytes) {
        var first = true
        out.raw("{")
        out.key("crashed", first: &first); out.bool(thread.crashed)
        out.key("frames", first: &first); out.array(thread.frames) { out, frame in write(frame, to: &out) }
        out.key("index", first: &first); out.integer(thread.index)
        if let name = thread.name { out.key("name", first: &first); out.string(name) }
        if let part = thread.part { out.key("part", first: &first); out.string(part) }
        out.raw("}")
    }

    private static func write(_ f: SymbolicatedFrame, to out: inout JSONBytes) {
        // `address` always comes first, so each later key is one literal with its comma: a
        // report writes 14 keys for each of its frames.
        out.raw(#"{"address":"#); out.address(f.address)
        if let column = f.column { out.raw(#","column":"#); out.integer(column) }
        if let file = f.file { out.raw(#","file":"#); out.string(file) }
        if let function = f.function { out.raw(#","function":"#); out.string(function) }
        if let image = f.image { out.raw(#","image":"#); out.string(image) }
        if let offset = f.imageOffset { out.raw(#","imageOffset":"#); out.address(offset) }
        if let inApp = f.inApp { out.raw(#","inApp":"#); out.bool(inApp) }
        out.raw(#","index":"#); out.integer(f.index)
        out.raw(#","inlined":"#); out.bool(f.inlined)
        out.raw(#","kind":"#); out.string(f.kind.rawValue)
        if let line = f.line { out.raw(#","line":"#); out.integer(line) }
        if let offset = f.offset { out.raw(#","offset":"#); out.integer(offset) }
        out.raw(#","status":"#); out.string(f.status.rawValue)
        if let symbol = f.symbol { out.raw(#","symbol":"#); out.string(symbol) }
        if let trust = f.trust { out.raw(#","trust":"#); out.string(trust.rawValue) }
        out.raw("}")
    }

    private static func write(_ lag: SymbolicatedLag, to out: inout JSONBytes) {
        var first = true
        out.raw("{")
        out.key("profile", first: &first)
        out.array(lag.profile) { out, node in
            var first = true
            out.raw("{")
            out.key("frames", first: &first); out.array(node.frames) { out, frame in write(frame, to: &out) }
            out.key("node", first: &first); write(node.node, to: &out)
            out.raw("}")
        }
        out.key("samples", first: &first)
        out.array(lag.samples) { out, sample in
            var first = true
            out.raw("{")
            out.key("frames", first: &first); out.array(sample.frames) { out, frame in write(frame, to: &out) }
            if let timestamp = sample.timestamp { out.key("timestamp", first: &first); out.string(timestamp) }
            out.raw("}")
        }
        out.raw("}")
    }

    private static func write(_ node: ProfileNode, to out: inout JSONBytes) {
        var first = true
        out.raw("{")
        if let address = node.address { out.key("address", first: &first); out.address(address) }
        out.key("costTime", first: &first); out.number(node.costTime)
        out.key("count", first: &first); out.integer(node.count)
        out.key("depth", first: &first); out.integer(node.depth)
        if let methodId = node.methodId { out.key("methodId", first: &first); out.integer(methodId) }
        out.raw("}")
    }
}
