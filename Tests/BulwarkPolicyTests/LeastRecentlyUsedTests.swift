import Testing

@testable import BulwarkPolicy

@Suite("Least-recently-used map")
struct LeastRecentlyUsedTests {
    @Test func evictsTheLeastRecentlyUsedWhenFull() {
        var map = LeastRecentlyUsed<String, Int>(capacity: 2)
        map.insert(1, forKey: "a")
        map.insert(2, forKey: "b")
        #expect(map.value(forKey: "a") == 1)  // a is now more recent than b
        map.insert(3, forKey: "c")
        #expect(map.count == 2)
        #expect(map.value(forKey: "b") == nil)
        #expect(map.value(forKey: "a") == 1)
        #expect(map.value(forKey: "c") == 3)
    }

    @Test func replacingAKeyEvictsNothing() {
        var map = LeastRecentlyUsed<String, Int>(capacity: 2)
        map.insert(1, forKey: "a")
        map.insert(2, forKey: "b")
        map.insert(10, forKey: "a")
        #expect(map.count == 2)
        #expect(map.value(forKey: "a") == 10)
        #expect(map.value(forKey: "b") == 2)
    }

    @Test func aStaleEntryGoesBeforeTheLeastRecentlyUsed() {
        var map = LeastRecentlyUsed<String, Int>(capacity: 3)
        map.insert(1, forKey: "a")
        map.insert(-2, forKey: "stale")
        map.insert(3, forKey: "c")
        _ = map.value(forKey: "stale")  // the most recently used, but stale
        map.insert(4, forKey: "d", evictingFirst: { $0 < 0 })
        #expect(map.value(forKey: "stale") == nil)
        #expect(map.value(forKey: "a") == 1)
        #expect(map.count == 3)
    }

    @Test func capacityZeroKeepsNothingAndRemovalForgets() {
        var empty = LeastRecentlyUsed<String, Int>(capacity: 0)
        empty.insert(1, forKey: "a")
        #expect(empty.count == 0)
        var map = LeastRecentlyUsed<String, Int>(capacity: 4)
        map.insert(1, forKey: "a")
        map.insert(2, forKey: "b")
        map.removeValue(forKey: "a")
        #expect(map.value(forKey: "a") == nil)
        map.removeAll()
        #expect(map.count == 0)
    }
}
