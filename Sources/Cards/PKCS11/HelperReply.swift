import TokenpinCardCrypto
import TokenpinCore

/// The helper's answer to one request; `calls` is the number of PKCS#11 calls it made for it.
enum HelperReply: ~Copyable {
    /// The modules loaded (sent once, at start, before any request).
    case ready(modules: [String], calls: Int)
    case inventory(PKCS11Inventory, calls: Int)
    case key(PKCS11Key, calls: Int)
    case secret(SecretBytes, calls: Int)
    case done(calls: Int)
    case token(PKCS11TokenInfo, calls: Int)
    case failure(PKCS11TokenError, calls: Int)

    private enum Tag: UInt8 {
        case ready = 0x81
        case inventory
        case key
        case secret
        case done
        case token
        case failure = 0xFF
    }

    consuming func encode() -> WireWriter {
        switch consume self {
        case .ready(let modules, let calls):
            var writer = WireWriter(Tag.ready.rawValue)
            writer.append(count: modules.count)
            for module in modules { writer.append(module) }
            writer.append(count: calls)
            return writer
        case .inventory(let inventory, let calls):
            var writer = WireWriter(Tag.inventory.rawValue)
            writer.append(inventory)
            writer.append(count: calls)
            return writer
        case .key(let key, let calls):
            var writer = WireWriter(Tag.key.rawValue)
            writer.append(key, withToken: true)
            writer.append(count: calls)
            return writer
        case .secret(let secret, let calls):
            var writer = WireWriter(Tag.secret.rawValue)
            writer.append(secret: secret)
            writer.append(count: calls)
            return writer
        case .done(let calls):
            var writer = WireWriter(Tag.done.rawValue)
            writer.append(count: calls)
            return writer
        case .token(let token, let calls):
            var writer = WireWriter(Tag.token.rawValue)
            writer.append(token)
            writer.append(count: calls)
            return writer
        case .failure(let error, let calls):
            var writer = WireWriter(Tag.failure.rawValue)
            writer.append(error)
            writer.append(count: calls)
            return writer
        }
    }

    /// The reply in a frame, every field checked (the helper runs a module tokenpin does not trust: what it sends is
    /// as hostile as the module): keys are validated again here, points on their curves, RSA sizes supported.
    static func decode(_ frame: borrowing SecretBytes) throws(HelperWireError) -> HelperReply {
        enum Parsed {
            case ready([String], Int)
            case inventory(PKCS11Inventory, Int)
            case key(PKCS11Key, Int)
            case secret(Range<Int>, Int)
            case done(Int)
            case token(PKCS11TokenInfo, Int)
            case failure(PKCS11TokenError, Int)
        }
        let parsed = try frame.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws(HelperWireError) -> Parsed in
            guard let first = raw.first, let tag = Tag(rawValue: first) else {
                throw HelperWireError(.unknownValue, "an unknown reply")
            }
            var reader = WireReader(raw)
            let parsed: Parsed
            switch tag {
            case .ready:
                var modules: [String] = []
                for _ in 0..<(try reader.count()) { modules.append(try reader.text()) }
                parsed = .ready(modules, try reader.count())
            case .inventory:
                parsed = .inventory(try reader.inventory(), try reader.count())
            case .key:
                parsed = .key(try reader.key(token: nil), try reader.count())
            case .secret:
                parsed = .secret(try reader.range(), try reader.count())
            case .done:
                parsed = .done(try reader.count())
            case .token:
                parsed = .token(try reader.token(), try reader.count())
            case .failure:
                parsed = .failure(try reader.error(), try reader.count())
            }
            try reader.finish()
            return parsed
        }
        switch parsed {
        case .ready(let modules, let calls): return .ready(modules: modules, calls: calls)
        case .inventory(let inventory, let calls): return .inventory(inventory, calls: calls)
        case .key(let key, let calls): return .key(key, calls: calls)
        case .secret(let range, let calls): return .secret(copySecret(in: frame, at: range), calls: calls)
        case .done(let calls): return .done(calls: calls)
        case .token(let token, let calls): return .token(token, calls: calls)
        case .failure(let error, let calls): return .failure(error, calls: calls)
        }
    }
}

extension WireWriter {
    /// An inventory: each token's listing (its keys, each with whether it matches the asked URI strictly and
    /// loosely, and the keys it cannot use, said why), then the problems met on the way.
    mutating func append(_ inventory: PKCS11Inventory) {
        append(count: inventory.listings.count)
        for listing in inventory.listings {
            append(listing.token)
            append(count: listing.keys.count)
            for index in listing.keys.indices {
                append(listing.keys[index], withToken: false)
                append(listing.matches[index])
                append(listing.looseMatches[index])
            }
            append(count: listing.unusable.count)
            for reason in listing.unusable { append(reason) }
        }
        append(count: inventory.problems.count)
        for problem in inventory.problems { append(problem) }
    }
}

extension WireReader {
    /// An inventory as `WireWriter.append(_: PKCS11Inventory)` wrote it.
    mutating func inventory() throws(HelperWireError) -> PKCS11Inventory {
        var inventory = PKCS11Inventory()
        for _ in 0..<(try count()) {
            let token = try token()
            var keys: [PKCS11Key] = []
            var matches: [Bool] = []
            var looseMatches: [Bool] = []
            for _ in 0..<(try count()) {
                keys.append(try key(token: token))
                matches.append(try bool())
                looseMatches.append(try bool())
            }
            var unusable: [String] = []
            for _ in 0..<(try count()) { unusable.append(try text()) }
            inventory.listings.append(
                PKCS11TokenListing(
                    token: token, keys: keys, matches: matches, looseMatches: looseMatches, unusable: unusable))
        }
        for _ in 0..<(try count()) { inventory.problems.append(try text()) }
        return inventory
    }
}
