// Accuracy fixture (Swift, -O): structs, classes, generics, closures, protocols.

protocol Shape {
    func area() -> Double
    var name: String { get }
}

struct Rectangle: Shape {
    var width: Double
    var height: Double
    func area() -> Double { width * height }
    var name: String { "rectangle" }
}

final class Circle: Shape {
    let radius: Double
    init(radius: Double) { self.radius = radius }
    func area() -> Double { Double.pi * radius * radius }
    var name: String { "circle" }
}

struct Stack<Element> {
    private var items: [Element] = []
    mutating func push(_ item: Element) { items.append(item) }
    mutating func pop() -> Element? { items.popLast() }
    var count: Int { items.count }
}

final class Registry {
    private var counts: [String: Int] = [:]
    @inline(never)
    func record(_ key: String) { counts[key, default: 0] += 1 }
    var distinctKeys: Int { counts.count }
}

@inline(never)
func summarize<S: Sequence>(_ items: S, _ transform: (S.Element) -> Double) -> (total: Double, count: Int) {
    var total = 0.0
    var count = 0
    for item in items {
        total += transform(item)
        count += 1
    }
    return (total, count)
}

@inline(never)
func makeShapes(_ n: Int) -> [any Shape] {
    (0..<n).map { (i: Int) -> any Shape in
        if i % 3 == 0 {
            return Circle(radius: Double(i) * 0.5 + 1)
        }
        let width = Double(i + 1)
        let height = Double(2 * i + 1)
        return Rectangle(width: width, height: height)
    }
}

@inline(never)
func fibonacci(_ n: Int) -> Int {
    n < 2 ? n : fibonacci(n - 1) + fibonacci(n - 2)
}

@inline(never)
func run(_ n: Int) -> Double {
    let registry = Registry()
    let shapes = makeShapes(n)
    let summary = summarize(shapes) { shape in
        registry.record(shape.name)
        return shape.area()
    }
    var stack = Stack<Int>()
    for i in 0..<n { stack.push(i * i) }
    var popped = 0
    while let top = stack.pop() { popped &+= top }
    let sorted = shapes.sorted { $0.area() < $1.area() }
    let mean = summary.total / Double(max(summary.count, 1))
    let extra: Int = popped + fibonacci(12) + registry.distinctKeys + sorted.count
    return mean + Double(extra)
}

print(run(CommandLine.arguments.count + 9))
