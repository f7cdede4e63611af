import Foundation
import ReportFormats
import ReportModel
import TestSupport
import Testing

/// Image-relative frames ("image+offset") of one thread, so reports from different runs compare.
func relativeFrames(_ report: RawReport, _ thread: RawThread) -> [String] {
    thread.frames.map { frame in
        guard let image = report.images.first(where: { $0.contains(frame.address.value) }) else { return "?" }
        return "\(image.name)+\(frame.address.value - image.loadAddress.value)/\(frame.kind)"
    }
}

@Suite(.serialized) struct SwiftBacktraceTextTests {
    @Test func realTextReportMatchesTheRuntimesJSONReport() throws {
        let textData = try CrashFixture.shared.report(symbolicate: "off", format: "text")
        #expect(FormatRegistry.standard.detect(textData)?.id == "swift-backtrace-text")
        let text = try FormatRegistry.standard.detectAndParse(textData)
        let json = try SwiftBacktraceJSONFormat().parse(try CrashFixture.shared.report(symbolicate: "off"))

        let binary = try CrashFixture.shared.binary()
        let demo = try #require(text.images.first { $0.path == binary })
        #expect(demo.id?.hex == (try readelfBuildID(binary)))
        #expect(text.arch == json.arch)
        let textThread = try #require(text.threads.first { $0.crashed })
        let jsonThread = try #require(json.threads.first { $0.crashed })
        #expect(textThread.frames.count >= 4)
        // Two runs, two load addresses; the image-relative frames and their kinds are the same.
        #expect(relativeFrames(text, textThread) == relativeFrames(json, jsonThread))
        #expect(text.exception?.type == "Illegal instruction")
        #expect(text.warnings.contains { $0.contains("images not listed") })
    }

    @Test func symbolicatedTextReportKeepsTheSameRawFrames() throws {
        let off = try SwiftBacktraceTextFormat().parse(try CrashFixture.shared.report(symbolicate: "off", format: "text"))
        let full = try SwiftBacktraceTextFormat().parse(try CrashFixture.shared.report(symbolicate: "full", format: "text"))
        let a = try #require(off.threads.first { $0.crashed })
        let b = try #require(full.threads.first { $0.crashed })
        #expect(relativeFrames(off, a) == relativeFrames(full, b))
    }

    @Test func segfaultCarriesTheFaultAddress() throws {
        let report = try SwiftBacktraceTextFormat().parse(
            try CrashFixture.shared.report(symbolicate: "off", mode: "segv", format: "text"))
        #expect(report.exception?.faultAddress == Address(8))
    }
}

@Suite struct LagReportTests {
    let example = """
        {
          "type": "lag",
          "arch": "arm64 v8",
          "app": {"name": "Demo", "version": "2.1", "build": "77"},
          "dyld_images": [
            {"name": "/var/containers/Bundle/Application/X/Demo.app/Demo", "uuid": "8F528C10-3E80-3DD6-B0BE-5D558F64F7AB",
             "base_addr": "0x104d00000", "addr_slide": "0x4d00000"},
            {"name": "/usr/lib/libBacktraceRecording.dylib", "uuid": "31239ad326ce32dfb01b3eb5703fac81",
             "base_addr": 8219447296, "addr_slide": 96567296}
          ],
          "samples": [
            ["0x104d0824f", "0x104d08100"],
            {"timestamp": "2024-05-01T10:00:00.050Z", "frames": [4375740999, "0x104d08100"]}
          ],
          "thread_profile": [
            {"depth": 0, "count": 30, "costTime": 1500, "methodAddress": "0x104d08100"},
            {"depth": 1, "count": 29, "costTime": 1450, "methodAddress": "0x104d0824f"},
            {"depth": 1, "count": 1, "costTime": 50, "methodId": 181}
          ]
        }
        """

    @Test func parsesTheDocumentedSchema() throws {
        let data = Data(example.utf8)
        #expect(FormatRegistry.standard.detect(data)?.id == "sdk-lag")
        let report = try FormatRegistry.standard.detectAndParse(data)
        #expect(report.kind == .lag)
        #expect(report.images.count == 2)
        // vmAddress = base_addr − addr_slide: the preferred base the slide moved the image from.
        #expect(report.images[0].loadAddress == Address(0x1_04d0_0000))
        #expect(report.images[0].vmAddress == Address(0x1_0000_0000))
        #expect(report.images[1].loadAddress == Address(0x1_e9ea_d000))
        #expect(report.images[1].vmAddress == Address(0x1_e9ea_d000 - 0x5c1_8000))
        #expect(report.images[0].id?.hex == "8f528c103e803dd6b0be5d558f64f7ab")
        let lag = try #require(report.lag)
        #expect(lag.samples.count == 2)
        #expect(lag.samples[0].frames.map(\.address.value) == [0x1_04d0_824f, 0x1_04d0_8100])
        #expect(lag.samples[1].frames.map(\.address.value) == [4_375_740_999, 0x1_04d0_8100])
        #expect(lag.samples[1].timestamp == "2024-05-01T10:00:00.050Z")
        #expect(lag.samples.allSatisfy { $0.frames.first?.kind == .pc && $0.frames.dropFirst().allSatisfy { $0.kind == .returnAddress } })
        #expect(lag.profile.map(\.depth) == [0, 1, 1])
        #expect(lag.profile[1].address == Address(0x1_04d0_824f))
        #expect(lag.profile[2].methodId == 181 && lag.profile[2].address == nil)
        #expect(report.app?.build == "77")
    }

    @Test func rejectsReportsWithNothingToSymbolicateOrAnImpossibleSlide() throws {
        let empty = #"{"dyld_images": [{"name": "/a", "uuid": "00112233445566778899aabbccddeeff", "base_addr": "0x1000"}]}"#
        #expect(throws: ReportParseError.invalidReport(format: "sdk-lag", reason: "neither samples nor thread_profile: nothing to symbolicate")) {
            try LagReportFormat().parse(Data(empty.utf8))
        }
        let slide = #"{"dyld_images": [{"name": "/a", "base_addr": "0x1000", "addr_slide": "0x2000"}], "samples": [["0x1000"]]}"#
        #expect(throws: ReportParseError.self) { try LagReportFormat().parse(Data(slide.utf8)) }
        let noBase = #"{"dyld_images": [{"name": "/a"}], "samples": [["0x1000"]]}"#
        #expect(throws: ReportParseError.invalidReport(format: "sdk-lag", reason: "dyld_images[0].base_addr: missing")) {
            try LagReportFormat().parse(Data(noBase.utf8))
        }
    }
}

@Suite struct AndroidTombstoneTests {
    static let buildID = "5a1b2c3d4e5f60718293a4b5c6d7e8f901234567"
    static let tombstone = """
        *** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***
        Build fingerprint: 'google/raven/raven:13/TQ1A.230105.002/9325679:user/release-keys'
        Revision: 'MP1.0'
        ABI: 'arm64'
        Timestamp: 2023-02-01 10:00:00.123456789+0100
        pid: 4242, tid: 4250, name: RenderThread  >>> com.example.app <<<
        uid: 10298
        signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0000000000000010
            x0  0000000000000000  x1  0000007fc0a1b2c0  x2  0000000000000004  x3  0000000000000000
        backtrace:
              #00 pc 000000000001a2b4  /data/app/~~abc==/com.example.app-xyz==/lib/arm64/libnative.so (crash_here+20) (BuildId: \(buildID))
              #01 pc 000000000001a300  /data/app/~~abc==/com.example.app-xyz==/lib/arm64/libnative.so (BuildId: \(buildID))
              #02 pc 0000000000042f10  /data/app/~~abc==/com.example.app-xyz==/base.apk!libinapk.so (offset 0x8000) (Java_com_example_Foo_bar+64) (BuildId: 00112233445566778899aabbccddeeff00112233)
              #03 pc 00000000000b63a0  /apex/com.android.runtime/lib64/bionic/libc.so (__pthread_start(void*)+208) (BuildId: 1e1b2c3d4e5f60718293a4b5c6d7e8f90123abcd)
              #04 pc 0000000000052c10  /system/lib64/libnobuildid.so (something+8)
              #05 pc 00000000002d4a8c  [anon:dalvik-jit-code-cache]

        --- --- --- --- --- --- --- --- --- --- --- --- --- --- --- ---
        pid: 4242, tid: 4242, name: example.app  >>> com.example.app <<<
        backtrace:
              #00 pc 000000000009c2d8  /apex/com.android.runtime/lib64/bionic/libc.so (__epoll_pwait+8) (BuildId: 1e1b2c3d4e5f60718293a4b5c6d7e8f90123abcd)
        """

    @Test(arguments: ["", "11-21 10:00:00.123  1234  1234 F DEBUG   : ", "F/DEBUG  ( 1234): ", "2023-02-01 10:00:00.123 1234-1234 /? A/DEBUG: "])
    func parsesTombstonesWithAndWithoutLogcatPrefixes(_ prefix: String) throws {
        let text = Self.tombstone.split(separator: "\n", omittingEmptySubsequences: false).map { prefix + $0 }.joined(separator: "\n")
        let data = Data(text.utf8)
        #expect(FormatRegistry.standard.detect(data)?.id == "android-tombstone")
        let report = try FormatRegistry.standard.detectAndParse(data)
        #expect(report.arch == "arm64")
        #expect(report.app?.name == "com.example.app")
        #expect(report.exception?.signal == "SIGSEGV")
        #expect(report.exception?.faultAddress == Address(0x10))
        #expect(report.threads.map(\.index) == [4250, 4242])
        #expect(report.threads.map(\.crashed) == [true, false])
        let crashed = report.threads[0]
        #expect(crashed.frames.map(\.address.value) == [0x1a2b4, 0x1a300, 0x42f10, 0xb63a0, 0x52c10, 0x2d4a8c])
        #expect(crashed.frames.allSatisfy { $0.kind == .pc && $0.imageIndex != nil })
        // pc is the file address: every image sits at 0 with a preferred base of 0.
        #expect(report.images.allSatisfy { $0.loadAddress == Address(0) && $0.vmAddress == Address(0) })
        let names = crashed.frames.map { report.images[$0.imageIndex!].name }
        #expect(names == ["libnative.so", "libnative.so", "libinapk.so", "libc.so", "libnobuildid.so", "[anon:dalvik-jit-code-cache]"])
        #expect(report.images[crashed.frames[0].imageIndex!].id?.hex == Self.buildID)
        #expect(report.images[crashed.frames[2].imageIndex!].path?.hasSuffix("base.apk!libinapk.so") == true)
        #expect(report.images[crashed.frames[4].imageIndex!].id == nil)
        // One image per library: thread 2's libc.so is the same image as thread 1's.
        #expect(report.threads[1].frames[0].imageIndex == crashed.frames[3].imageIndex)
        #expect(report.images.count == 5)
    }

    @Test func aTombstoneWithoutFramesIsAnError() throws {
        let text = "pid: 1, tid: 1, name: x  >>> y <<<\nsignal 6 (SIGABRT), code -1 (SI_QUEUE), fault addr --------\nbacktrace:\n  #00 pc zzzz\n"
        #expect(throws: ReportParseError.self) { try AndroidTombstoneFormat().parse(Data(text.utf8)) }
    }
}
