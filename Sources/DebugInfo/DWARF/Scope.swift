import CElfUtils

/// A function or an inlined call, flattened in pre-order so a scope's descendants are
/// `index+1 ..< subtreeEnd`.
struct Scope {
    var name: Int32
    var callFile: Int32 = -1
    var callLine: Int32 = 0
    var callColumn: Int32 = 0
    var firstRange: Int32
    var rangeCount: Int32
    var subtreeEnd: Int32 = 0
}
