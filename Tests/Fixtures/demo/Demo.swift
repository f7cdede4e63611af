// A small program that crashes on purpose, for the demo (`make run`) and the tests.
// Usage: Demo [index|segv]   (index: array index out of range → SIGILL; segv: null write → SIGSEGV)
import Foundation

struct Order {
    var items: [Int]
}

@inline(never) func lookUp(_ order: Order, at position: Int) -> Int {
    return order.items[position]
}

@inline(never) func total(_ order: Order) -> Int {
    return lookUp(order, at: order.items.count + 7) + 1
}

@inline(never) func writeThroughNull() {
    let pointer = UnsafeMutablePointer<Int>(bitPattern: 8)!
    pointer.pointee = 42
}

@inline(never) func process(_ mode: String) -> Int {
    if mode == "segv" {
        writeThroughNull()
        return 0
    }
    return total(Order(items: [3, 1, 4])) * 2
}

let mode = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "index"
print(process(mode))
