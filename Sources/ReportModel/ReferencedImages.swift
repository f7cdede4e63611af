/// The image a frame falls in, and the address that was matched against it.
public struct FrameLocation: Sendable, Hashable {
    /// Index into the report's `images`.
    public var imageIndex: Int
    /// The frame's address with pointer-authentication bits stripped (`PointerAuthentication`).
    public var address: UInt64
    public init(imageIndex: Int, address: UInt64) {
        self.imageIndex = imageIndex
        self.address = address
    }
}

extension RawReport {
    /// Where a frame falls: the image the report attributes it to when that index is valid,
    /// else the image whose range holds its (stripped) address. Nil for a malformed frame and
    /// for one outside every image. The symbolicator and the queue's build-id list both go
    /// through here, so a worker is chosen for exactly the debug files it will open.
    /// `locator` must be `ImageLocator(images: images)`, built once per report.
    public func location(of frame: RawFrame, locator: ImageLocator) -> FrameLocation? {
        guard frame.malformed != true else { return nil }
        let attributed = frame.imageIndex.flatMap { images.indices.contains($0) ? $0 : nil }
        // The attributed image's arch decides, since a report may mix arm64 and arm64e images.
        let arch = attributed.flatMap { images[$0].arch } ?? self.arch
        let address = PointerAuthentication.strip(frame.address.value, arch: arch, platform: platform ?? os)
        guard let index = attributed ?? locator.image(containing: address) else { return nil }
        return FrameLocation(imageIndex: index, address: address)
    }

    /// The index of the image a frame falls in (`location(of:locator:)`).
    public func imageIndex(of frame: RawFrame, locator: ImageLocator) -> Int? {
        location(of: frame, locator: locator)?.imageIndex
    }

    /// The build ids of the images at least one frame falls in (threads, lag samples and lag
    /// profile nodes), unique, in image order; images without an id or with an empty id are left out.
    public var referencedBuildIds: [BuildID] {
        let locator = ImageLocator(images: images)
        var referenced = [Bool](repeating: false, count: images.count)
        func mark(_ frame: RawFrame) {
            if let index = imageIndex(of: frame, locator: locator) { referenced[index] = true }
        }
        for thread in threads { thread.frames.forEach(mark) }
        if let lag {
            for sample in lag.samples { sample.frames.forEach(mark) }
            // The symbolicator looks a profile node's method address up as a pc.
            for node in lag.profile { if let address = node.address { mark(RawFrame(address: address, kind: .pc)) } }
        }
        var seen: Set<BuildID> = []
        var ids: [BuildID] = []
        for (index, image) in images.enumerated() where referenced[index] {
            guard let id = image.id, !id.hex.isEmpty, seen.insert(id).inserted else { continue }
            ids.append(id)
        }
        return ids
    }
}
