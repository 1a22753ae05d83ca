import Testing

@testable import TokenpinCore

/// Guarded regions released by secrets are wiped, kept for the next secret of the same length, and bounded.
/// Each test uses its own `GuardedRegions`, so tests running in parallel do not share kept regions.
@Suite struct GuardedRegionsTests {
    @Test("a released region is wiped at once and handed, zeroed, to the next allocation of its size")
    func releasedRegionIsWipedAndReused() {
        let regions = GuardedRegions(capacity: 2)
        let region = regions.allocate(32)
        region.initializeMemory(as: UInt8.self, repeating: 0xA5, count: 32)
        regions.release(region, size: 32)
        #expect(regions.keptCount(32) == 1)
        let keptBytes = regions.withNextKept(32) { bytes in bytes.map { Array($0) } }
        #expect(keptBytes == [UInt8](repeating: 0, count: 32))
        let again = regions.allocate(32)
        #expect(again == region)
        #expect(regions.keptCount(32) == 0)
        regions.release(again, size: 32)
    }

    @Test("a kept region goes only to an allocation of exactly its size")
    func otherSizesGetNewRegions() {
        let regions = GuardedRegions(capacity: 2)
        let region = regions.allocate(32)
        regions.release(region, size: 32)
        let other = regions.allocate(6)
        #expect(other != region)
        #expect(regions.keptCount(32) == 1)
        #expect(UnsafeRawBufferPointer(start: other, count: 6).allSatisfy { $0 == 0 })
        regions.release(other, size: 6)
        #expect(regions.keptCount(6) == 1)
    }

    @Test("no more than capacity regions are kept; the others are freed")
    func keepsAtMostCapacity() {
        let regions = GuardedRegions(capacity: 2)
        let pointers = (0..<4).map { _ in regions.allocate(16) }
        for pointer in pointers { regions.release(pointer, size: 16) }
        #expect(regions.keptCount(16) == 2)
    }
}
