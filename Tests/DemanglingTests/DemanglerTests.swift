import Foundation
import Demangling
import TestSupport
import Testing

/// The demangler against independent tools: binutils' c++filt for C++, the toolchain's
/// swift-demangle (without sugar, the runtime's form) for Swift.
@Suite struct DemanglerTests {
    func mangledNames(in file: String, where keep: (String) -> Bool) throws -> [String] {
        let out = try runChecked("nm", ["--defined-only", file])
        return Array(Set(out.stdout.split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) }.filter(keep))).sorted()
    }

    func oracle(_ tool: String, _ args: [String], _ names: [String]) throws -> [String] {
        let out = try runChecked(try findTool(tool), args, stdin: names.joined(separator: "\n") + "\n")
        return out.stdout.split(separator: "\n", omittingEmptySubsequences: false).prefix(names.count).map(String.init)
    }

    @Test func cxxMatchesCxxfilt() throws {
        let fixtures = try sharedElfFixtures.get()
        let names = try mangledNames(in: try fixtures.named("cpp-gcc").unstripped) { $0.hasPrefix("_Z") }
        #expect(names.count > 20)
        let expected = try oracle("c++filt", [], names)
        for (name, want) in zip(names, expected) {
            #expect(Demangler.demangle(name) == want, "\(name)")
            // Mach-O adds one leading underscore; the name underneath is the same.
            #expect(Demangler.demangle("_" + name) == want, "_\(name)")
            // C++ has one style: the symcache answers a C++ name's full form for both.
            #expect(Demangler.demangle(name, style: .simplified) == want, "\(name), simplified")
            #expect(Demangler.family(of: name)?.stylesDiffer == false, "\(name)")
        }
    }

    @Test func swiftMatchesSwiftDemangleWithoutSugar() throws {
        let fixtures = try sharedElfFixtures.get()
        let names = try mangledNames(in: try fixtures.named("swift-O").unstripped) { $0.hasPrefix("$s") }
        #expect(names.count > 20)
        let expected = try oracle("swift-demangle", ["--no-sugar"], names)
        for (name, want) in zip(names, expected) {
            #expect(Demangler.demangle(name) == want, "\(name)")
            #expect(Demangler.demangle("_" + name) == want, "_\(name) (Mach-O spelling)")
            // The symcache tells the family from the mapped bytes, not a `String`.
            let family = name.utf8.withContiguousStorageIfAvailable { Demangler.family(ofUTF8: UnsafeRawBufferPointer($0)) }
            #expect(family == .swift && Demangler.family(of: name) == .swift, "\(name)")
        }
    }

    @Test func simplifiedStyleDropsModuleAndSignature() throws {
        // swift-demangle --simplified is the toolchain's rendering of the backtracer's short form.
        let fixtures = try sharedElfFixtures.get()
        let names = try mangledNames(in: try fixtures.named("swift-O").unstripped) { $0.hasPrefix("$s") && $0.hasSuffix("F") }
        let expected = try oracle("swift-demangle", ["--simplified"], names)
        var agree = 0
        for (name, want) in zip(names, expected) {
            if Demangler.demangle(name, style: .simplified) == want { agree += 1 }
        }
        #expect(agree * 10 >= names.count * 9, "\(agree)/\(names.count) simplified names agree with swift-demangle --simplified")
    }

    @Test(arguments: ["main", "-[AppDelegate application:didFinishLaunchingWithOptions:]", "store_through", ""])
    func otherNamesAreKept(name: String) {
        #expect(Demangler.demangle(name) == name)
        #expect(Demangler.demangle(name, style: .simplified) == name)
        #expect(name.utf8.withContiguousStorageIfAvailable { Demangler.family(ofUTF8: UnsafeRawBufferPointer($0)) } == .some(nil))
        #expect(Demangler.family(of: name) == nil)
    }
}
