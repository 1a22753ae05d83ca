import Testing

@testable import TokenpinAPDU

/// `TLVIndex.find` answers as `TLV.find` does: the same object or nil, or the same `.tooDeep`, for every tag.
@Suite struct TLVIndexTests {
    /// What a lookup gave: the object, nil, or the error's code.
    enum Answer: Equatable {
        case found(TLV?)
        case failed(APDUError.Code)
    }

    static func answer(_ body: () throws(APDUError) -> TLV?) -> Answer {
        do throws(APDUError) {
            return .found(try body())
        } catch {
            return .failed(error.code)
        }
    }

    /// Every tag in `objects` (at any depth) and a few that are in none.
    static func tags(_ objects: [TLV]) -> [UInt32] {
        var tags: [UInt32] = [0x01, 0x5F99, 0x7F66]
        func collect(_ objects: [TLV]) {
            for object in objects {
                tags.append(object.tag)
                if object.isConstructed, let children = try? object.children() { collect(children) }
            }
        }
        collect(objects)
        return tags
    }

    static func expectSameAnswers(_ objects: [TLV], _ comment: Comment) {
        let index = TLVIndex(objects)
        for tag in tags(objects) {
            #expect(
                answer { () throws(APDUError) in try index.find(tag) }
                    == answer { () throws(APDUError) in try TLV.find(tag, in: objects) }, comment)
        }
    }

    @Test("an OpenPGP-like tree: nested, repeated tags, a constructed tag whose contents do not parse")
    func sameAnswersOnATree() {
        let discretionary = TLV(
            tag: 0x73,
            children: [
                TLV(tag: 0xC0, value: [1, 2]), TLV(tag: 0xC1, value: [0x12, 0x08]),
                TLV(tag: 0x7F74, value: [0xFF]),  // constructed, contents not TLV: primitive for the search
                TLV(tag: 0xC4, value: [0, 127, 127, 127, 3, 0, 3]),
            ])
        let objects = [
            TLV(tag: 0x4F, value: [0xD2, 0x76]), TLV(tag: 0x5F52, value: [0x00, 0x73]),
            TLV(tag: 0x7F66, children: [TLV(tag: 0x02, value: [8]), TLV(tag: 0xC0, value: [9])]), discretionary,
            TLV(tag: 0xC4, value: [1]),
        ]
        Self.expectSameAnswers(objects, "tree")
    }

    @Test("nesting past maxDepth throws where TLV.find throws, and not for a tag found before it")
    func sameAnswersPastTheDepthLimit() {
        for depth in [TLV.maxDepth - 1, TLV.maxDepth, TLV.maxDepth + 1, TLV.maxDepth + 3] {
            var inner = TLV(tag: 0x81, value: [7])
            for level in 0..<depth { inner = TLV(tag: 0xA0 | UInt32(level % 2), children: [inner]) }
            let objects = [TLV(tag: 0x80, value: [1]), inner, TLV(tag: 0x82, value: [2])]
            Self.expectSameAnswers(objects, "depth \(depth)")
            let index = TLVIndex(objects)
            #expect(Self.answer { () throws(APDUError) in try index.find(0x80) } == .found(objects[0]))
            let beyond = Self.answer { () throws(APDUError) in try index.find(0x82) }
            #expect(beyond == (depth > TLV.maxDepth ? .failed(.tooDeep) : .found(objects[2])), "depth \(depth)")
        }
    }

    /// A random tree: constructed and primitive tags drawn from a few (so that they repeat), nesting up to
    /// `depth`, and now and then a constructed tag whose contents are not TLV.
    static func randomObjects(depth: Int, using generator: inout some RandomNumberGenerator) -> [TLV] {
        let constructed: [UInt32] = [0x61, 0x73, 0xA0, 0x7F49, 0x7F74]
        let primitive: [UInt32] = [0x4F, 0x80, 0x81, 0xC0, 0xC4, 0x5F52]
        return (0..<Int.random(in: 1...3, using: &generator)).map { _ -> TLV in
            switch Int.random(in: 0..<6, using: &generator) {
            case 0..<2 where depth > 0:
                let tag = constructed.randomElement(using: &generator)!
                return TLV(tag: tag, children: randomObjects(depth: depth - 1, using: &generator))
            case 2:
                return TLV(tag: constructed.randomElement(using: &generator)!, value: [0xFF, 0x05])  // not TLV inside
            default:
                let value = (0..<Int.random(in: 0...3, using: &generator)).map { _ in UInt8.random(in: 0...255) }
                return TLV(tag: primitive.randomElement(using: &generator)!, value: value)
            }
        }
    }

    @Test("random trees, some nested past maxDepth: the same answers for every tag")
    func sameAnswersOnRandomTrees() {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<500 {
            let objects = Self.randomObjects(depth: TLV.maxDepth + 2, using: &generator)
            Self.expectSameAnswers(objects, "round \(round): \(objects.map { Hex.encode($0.encoded) })")
        }
    }
}
