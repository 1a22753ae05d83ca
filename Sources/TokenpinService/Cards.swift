import TokenpinAPDU
import TokenpinCore
import TokenpinOpenPGP

/// Where cards come from: the PC/SC readers, or the in-process simulator.
///
/// The service knows cards only through this protocol, so it compiles and is tested without pcsc-lite.
public protocol CardReaders: Sendable {
    /// The readers and whether each holds a card.
    ///
    /// Throws `.serviceUnavailable` when the smart-card service is not running.
    func list() throws(ServiceError) -> [ReaderPresence]
    /// Opens the card in `reader` for one operation.
    func open(_ reader: String) throws(ServiceError) -> any CardHandle
    /// Turns a transport error (inside `OpenPGPError.transport`) into a service error with a plain message.
    func describe(_ transportError: any Error) -> ServiceError
}

/// A reader's name and whether a card is in it.
public struct ReaderPresence: Sendable, Equatable {
    /// The reader's name.
    public var name: String
    /// Whether a card is present.
    public var cardPresent: Bool

    /// Creates a presence record.
    public init(name: String, cardPresent: Bool) {
        self.name = name
        self.cardPresent = cardPresent
    }
}

/// One open card for the length of an operation.
public protocol CardHandle: AnyObject {
    /// The channel to the card.
    var connection: any CardConnection { get }
    /// Runs `body` so that no other process's commands come in between (PC/SC transaction).
    func exclusive<R: ~Copyable>(_ body: () throws -> R) throws -> R
    /// Whether the card was reset when the last exclusive section ended (a PIN had been verified in it), so
    /// the application must be selected again before the next command.
    var needsReselect: Bool { get }
    /// Ends the session; a card on which a PIN was verified is reset so no other process inherits the state.
    func close()
}

/// What tokenpin found in one reader.
struct CardProbe {
    var reader: String
    var data: ApplicationRelatedData?
    var problem: String?

    /// The card's serial as tokenpin records it: manufacturer and serial number, 12 hex digits.
    var serial: String? { data.map { Self.serial(of: $0.aid) } }

    static func serial(of aid: ApplicationIdentifier) -> String {
        Hex.encode([UInt8(aid.manufacturer >> 8), UInt8(aid.manufacturer & 0xFF)]) + aid.serialString
    }

    /// `0006:12345678 (Yubico)`, for prompts and lists.
    var label: String {
        guard let data else { return reader }
        let serial = Self.serial(of: data.aid)
        let name = data.aid.manufacturerName.map { " (\($0))" } ?? ""
        return String(serial.prefix(4)) + ":" + String(serial.dropFirst(4)) + name
    }

    var usable: Bool { unusableReason == nil && data != nil }

    /// Why tokenpin cannot bind to the card's decryption key as it is: no key, or an algorithm it does not
    /// support (named, with the list of those it does).
    var unusableReason: String? {
        guard let data else { return problem }
        guard let attributes = data.algorithmAttributes[.decryption] else {
            return "the card does not say which algorithm its decryption key uses"
        }
        guard let algorithm = TokenKeyAlgorithm(attributes: attributes) else {
            return
                "the decryption key is \(attributes), which tokenpin cannot use (it supports \(TokenKeyAlgorithm.supportedList))"
        }
        if !data.hasDecryptionKey { return "the decryption key slot is set to \(algorithm) but holds no key" }
        return nil
    }

    var info: ReaderInfo {
        ReaderInfo(
            name: reader, cardPresent: true, serial: serial, isOpenPGP: data != nil, usable: usable,
            unusableReason: unusableReason, cardPINTriesLeft: data?.passwordStatus.retriesPW1)
    }
}

/// Labels a card for the person: `0006:12345678`.
public func cardLabel(serial: String) -> String {
    serial.count == 12 ? String(serial.prefix(4)) + ":" + String(serial.dropFirst(4)) : serial
}

/// Whether `name` matches a `reader` setting: exactly, or as a shell glob (`*`, `?`).
public func readerMatches(_ name: String, pattern: String) -> Bool {
    if name == pattern { return true }
    let n = Array(name)
    let p = Array(pattern)
    var memo: [Int: Bool] = [:]
    func match(_ i: Int, _ j: Int) -> Bool {
        let key = i * (p.count + 1) + j
        if let known = memo[key] { return known }
        var result: Bool
        if j == p.count {
            result = i == n.count
        } else if p[j] == "*" {
            result = match(i, j + 1) || (i < n.count && match(i + 1, j))
        } else {
            result = i < n.count && (p[j] == "?" || p[j] == n[i]) && match(i + 1, j + 1)
        }
        memo[key] = result
        return result
    }
    return match(0, 0)
}
