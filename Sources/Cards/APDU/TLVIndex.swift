/// Objects and all their descendants, parsed once, for many lookups: `find(_:)` answers exactly as
/// `TLV.find(_:in:)` does on the same objects (the same first match, depth first; contents that do not parse
/// are primitive; nesting past `TLV.maxDepth` throws when the search reaches it), without parsing a constructed
/// object's children again for every tag.
package struct TLVIndex: Sendable {
    /// One step of `TLV.find`'s depth-first walk.
    private enum Step: Sendable {
        /// An object the walk looks at.
        case object(TLV)
        /// Where the walk would go deeper than `TLV.maxDepth`: it throws there.
        case tooDeep
    }

    /// The walk, in order.
    private var steps: [Step] = []

    /// Indexes `objects` and everything inside them.
    package init(_ objects: [TLV]) {
        walk(objects, depth: 0)
    }

    private mutating func walk(_ objects: [TLV], depth: Int) {
        guard depth <= TLV.maxDepth else {
            steps.append(.tooDeep)
            return
        }
        for object in objects {
            steps.append(.object(object))
            if object.isConstructed, let children = try? object.children() { walk(children, depth: depth + 1) }
        }
    }

    /// The first object with `tag`, as `TLV.find(tag, in: objects)` finds it; throws `.tooDeep` where it would.
    package func find(_ tag: UInt32) throws(APDUError) -> TLV? {
        for step in steps {
            switch step {
            case .object(let object): if object.tag == tag { return object }
            case .tooDeep: throw APDUError(.tooDeep, "objects nested deeper than \(TLV.maxDepth)")
            }
        }
        return nil
    }
}
