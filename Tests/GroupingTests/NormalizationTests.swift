import Foundation
import Testing
import TestSupport

@testable import Grouping

/// Each normalisation rule of the grouping issue, on names written the way the demanglers
/// print them, and on the real names of a compiled C++ program.
@Suite struct NormalizationTests {
    /// `normalize` is memoised per (name, linkage name): the language comes from the linkage
    /// name, so the same demangled text must still normalise by its own symbol, every time.
    @Test func theCacheKeepsEachSymbolsOwnAnswer() {
        let name = "Shapes::Circle::area(double, int) const [clone .cold]"
        for _ in 0..<3 {
            #expect(FunctionNormalizer.normalize(name, symbol: "_ZNK6Shapes6Circle4areaEdi.cold") == "Shapes::Circle::area")
            // Without a C++ linkage name it is treated as C: only the clone suffix goes.
            #expect(FunctionNormalizer.normalize(name, symbol: nil) == "Shapes::Circle::area(double, int) const")
            #expect(FunctionNormalizer.normalize("-[Cart checkout]", symbol: nil) == "-[Cart checkout]")
        }
    }

    @Test func cxxDropsParametersAndQualifiers() {
        #expect(FunctionNormalizer.cxx("Shapes::Circle::area(double, int) const") == "Shapes::Circle::area")
        #expect(FunctionNormalizer.cxx("parse(char const*, unsigned long&&) volatile &") == "parse")
    }

    @Test func cxxDropsReturnTypes() {
        #expect(FunctionNormalizer.cxx("int compute<3>(int)") == "compute<T>")
        #expect(FunctionNormalizer.cxx("std::unique_ptr<Node> make_node<Node>(int)") == "make_node<T>")
        #expect(FunctionNormalizer.cxx("unsigned long long hash_all(std::string const&)") == "hash_all")
    }

    @Test func cxxCollapsesTemplates() {
        #expect(
            FunctionNormalizer.cxx("std::vector<int, std::allocator<int> >::push_back(int const&)")
                == "std::vector<T>::push_back")
        #expect(
            FunctionNormalizer.cxx("Box<std::map<int, std::pair<int, int> >, 3>::get<true>() const") == "Box<T>::get<T>")
    }

    @Test func cxxKeepsOperators() {
        #expect(FunctionNormalizer.cxx("Money::operator<(Money const&) const") == "Money::operator<")
        #expect(FunctionNormalizer.cxx("Stream::operator<<(int)") == "Stream::operator<<")
        #expect(FunctionNormalizer.cxx("std::function<void ()>::operator()() const") == "std::function<T>::operator()")
        #expect(FunctionNormalizer.cxx("operator new(unsigned long)") == "operator new")
        #expect(FunctionNormalizer.cxx("Handle::operator bool() const") == "Handle::operator bool")
        #expect(FunctionNormalizer.cxx("Ptr<int>::operator->() const") == "Ptr<T>::operator->")
    }

    @Test func cxxDropsCloneSuffixes() {
        #expect(FunctionNormalizer.cxx("crunch(int) [clone .cold]") == "crunch")
        #expect(FunctionNormalizer.cxx("crunch(int) [clone .constprop.0] [clone .isra.0]") == "crunch")
        #expect(FunctionNormalizer.normalize("crunch.cold") == "crunch")
        #expect(FunctionNormalizer.normalize("crunch.constprop.0.isra.0") == "crunch")
        // A dotted C name that is not a clone stays as it is.
        #expect(FunctionNormalizer.normalize("handler.v2") == "handler.v2")
    }

    @Test func cxxNormalisesAnonymousNamespacesAndLambdas() {
        #expect(FunctionNormalizer.cxx("(anonymous namespace)::Lexer::next()") == "{anonymous}::Lexer::next")
        #expect(FunctionNormalizer.cxx("`anonymous namespace'::Lexer::next()") == "{anonymous}::Lexer::next")
        #expect(
            FunctionNormalizer.cxx("main::{lambda(int)#2}::operator()(int) const") == "main::{lambda}::operator()")
    }

    @Test func swiftDropsSpecialisationNoise() {
        #expect(FunctionNormalizer.swift("generic specialization <Swift.Int> of Parser.next()") == "Parser.next()")
        #expect(FunctionNormalizer.swift("specialized Array.append(_:)") == "Array.append(_:)")
        #expect(
            FunctionNormalizer.swift("function signature specialization <Arg[0] = Dead> of Lexer.scan(_:)")
                == "Lexer.scan(_:)")
        #expect(FunctionNormalizer.swift("merged partial apply for closure #1 in Parser.parse()") == "closure #1 in Parser.parse()")
        // The full demangler's return type and generic arguments go too.
        #expect(FunctionNormalizer.swift("main.Parser.next<A>(A) -> A?") == "main.Parser.next<T>(A)")
        #expect(FunctionNormalizer.normalize("crash(_:)", symbol: "$s4main5crashyySiF") == "crash(_:)")
    }

    @Test func objectiveCStaysAsItIs() {
        let name = "-[AppDelegate application:didFinishLaunchingWithOptions:]"
        #expect(FunctionNormalizer.normalize(name, symbol: name) == name)
        #expect(FunctionNormalizer.normalize("+[NSObject(Swizzle) swizzle:with:]") == "+[NSObject(Swizzle) swizzle:with:]")
    }

    /// Real names: compile C++ with templates, an anonymous namespace and a cold clone, take
    /// every function name `nm` lists and `c++filt` demangles, and check the normalised forms
    /// against the names written in the source.
    @Test func realCxxNamesNormaliseToTheirSourceNames() throws {
        let dir = try TempDirectory("normalize")
        defer { dir.remove() }
        let source = dir.file("names.cpp")
        try """
            #include <vector>
            #include <cstdio>
            #include <cstdlib>
            namespace {
            struct Lexer { int pos; __attribute__((noinline)) int next(int step) { pos += step; return pos; } };
            }
            template <typename T, int N> struct Box {
                T items[N];
                __attribute__((noinline)) T sum(int scale) const { T s{}; for (int i = 0; i < N; i++) s += items[i] * scale; return s; }
            };
            __attribute__((noinline)) int crunch(int x) {
                if (__builtin_expect(x == 12345, 0)) { std::fprintf(stderr, "rare %d\\n", x); std::abort(); }
                return x * 3;
            }
            int main(int argc, char **) {
                Lexer lexer{argc};
                Box<long, 3> box{{1, 2, 3}};
                Box<double, 2> other{{1.5, 2.5}};
                std::vector<int> v; v.push_back(argc);
                return lexer.next(argc) + (int)box.sum(argc) + (int)other.sum(argc) + crunch(v[0]);
            }
            """.write(toFile: source, atomically: true, encoding: .utf8)
        let binary = dir.file("names")
        try runChecked(try findTool("g++"), ["-O2", "-g", source, "-o", binary])
        let symbols = try runChecked(try findTool("nm"), ["--defined-only", binary]).stdout
            .split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) }
        let demangled = try runChecked(try findTool("c++filt"), [], stdin: symbols.joined(separator: "\n")).stdout
            .split(separator: "\n").map(String.init)
        let normalized = Set(zip(symbols, demangled).map { FunctionNormalizer.normalize($1, symbol: $0) })
        for expected in ["{anonymous}::Lexer::next", "Box<T>::sum", "crunch", "main"] {
            #expect(normalized.contains(expected), "\(expected) not among \(normalized.sorted())")
        }
        // The cold part g++ split off crunch() groups with crunch itself.
        if let cold = zip(symbols, demangled).first(where: { $0.1.contains("crunch") && $0.1.contains("cold") }) {
            #expect(FunctionNormalizer.normalize(cold.1, symbol: cold.0) == "crunch")
        }
        // Both Box instantiations collapse into one name.
        #expect(demangled.filter { $0.contains("Box<") && $0.contains("::sum") }.count >= 2)
    }
}

/// `basename` scans bytes backwards; the expected names are written out by hand.
@Suite struct BasenameTests {
    @Test func lastComponentAfterBangAndSlash() {
        let cases: [(String, String)] = [
            ("/usr/lib/libswiftCore.so", "libswiftCore.so"), ("libc.so.6", "libc.so.6"), ("", ""),
            ("/", "/"), ("//", "//"), ("!", "!"), ("a/b/", "b"), ("/data/app/base.apk!lib/arm64/libfoo.so", "libfoo.so"),
            ("base.apk!libfoo.so", "libfoo.so"), ("base.apk!", "base.apk"), ("a!b!c/d", "d"), ("!/", "/"),
            ("/Applications/Café.app/Café", "Café"), ("/tmp/名前/🧨", "🧨"), ("a/\u{301}b", "\u{301}b"),
        ]
        for (path, expected) in cases {
            #expect(basename(path) == expected, "basename(\(path.debugDescription))")
        }
    }
}
