import TokenpinCore
import TokenpinSystem

/// The framing between tokenpin and its PKCS#11 helper: a 4-byte big-endian length, then that many bytes of
/// body, whose first byte is the message type. Fields follow in a fixed order: integers big-endian, byte strings
/// and text with a 4-byte length first.
///
/// Frames are built and read in guarded memory on both sides, since some carry a PIN or a derived secret; a
/// secret field is copied out of the frame into its own `SecretBytes`, and the frame is wiped when it goes.
enum HelperWire {
    /// The largest frame body either side accepts (a listing of many tokens stays far below).
    static let maximumFrameLength = 1 << 20
    /// The longest text field (a label, a URI, a message).
    static let maximumTextLength = 8192
    /// The longest byte field (a point, a modulus, a cryptogram, a PIN, a secret).
    static let maximumBytesLength = 8192
    /// The most entries of a list (tokens, keys, reasons).
    static let maximumCount = 1024
}

/// A framing or decoding failure: tests compare `code`.
struct HelperWireError: Error, Equatable, CustomStringConvertible {
    enum Code: String, Equatable {
        /// The frame ended inside a field.
        case truncated
        /// Bytes follow the last field.
        case trailingBytes = "trailing-bytes"
        /// A length or count past the limits.
        case tooLong = "too-long"
        /// A message type or an enumeration value that does not exist.
        case unknownValue = "unknown-value"
        /// A text field that is not UTF-8.
        case invalidText = "invalid-text"
        /// The other side closed the socket.
        case closed
        /// No whole frame arrived before the deadline.
        case timeout
        /// The socket failed.
        case io
    }

    var code: Code
    var detail: String

    init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    var description: String { detail }
}

/// A frame being written, in guarded memory that grows as fields are added.
struct WireWriter: ~Copyable {
    private var buffer: SecretBytes
    private var count = 4  // the length goes in front when the frame is sent

    /// A frame of message `type`.
    init(_ type: UInt8) {
        buffer = SecretBytes(count: 4096)
        append(type)
    }

    private mutating func reserve(_ extra: Int) {
        guard count + extra > buffer.count else { return }
        var size = buffer.count
        while size < count + extra { size *= 2 }
        let used = count
        let grown = SecretBytes(count: size) { target in
            buffer.withUnsafeBytes { source in
                target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[0..<used]))
            }
        }
        buffer = grown  // the old buffer is wiped as it goes
    }

    private mutating func append(raw bytes: UnsafeRawBufferPointer) {
        reserve(bytes.count)
        let offset = count
        buffer.withUnsafeMutableBytes { target in
            UnsafeMutableRawBufferPointer(rebasing: target[offset..<(offset + bytes.count)]).copyMemory(from: bytes)
        }
        count += bytes.count
    }

    mutating func append(_ value: UInt8) { withUnsafeBytes(of: value) { append(raw: $0) } }
    mutating func append(_ value: Bool) { append(UInt8(value ? 1 : 0)) }
    mutating func append(_ value: UInt32) { withUnsafeBytes(of: value.bigEndian) { append(raw: $0) } }
    mutating func append(_ value: UInt64) { withUnsafeBytes(of: value.bigEndian) { append(raw: $0) } }
    mutating func append(count value: Int) { append(UInt32(clamping: value)) }

    /// A byte string: its length, then its bytes.
    mutating func append(_ bytes: [UInt8]) {
        append(count: bytes.count)
        bytes.withUnsafeBytes { append(raw: $0) }
    }

    /// Text as UTF-8, with its length.
    mutating func append(_ text: String) { append(Array(text.utf8)) }

    /// A secret: its length, then its bytes, copied from guarded memory into the guarded frame.
    mutating func append(secret: borrowing SecretBytes) {
        append(count: secret.count)
        secret.withUnsafeBytes { append(raw: $0) }
    }

    /// Sends the frame: the length, then the body, from guarded memory. The frame is wiped when it goes.
    ///
    /// The corresponding C function is `send` (through `FileDescriptor.sendAll`).
    consuming func send(on socket: borrowing FileDescriptor) throws(Errno) {
        let length = UInt32(count - 4).bigEndian
        let total = count
        try buffer.withUnsafeMutableBytes { (raw: UnsafeMutableRawBufferPointer) throws(Errno) in
            withUnsafeBytes(of: length) { raw.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: 4) }
            try socket.sendAll(UnsafeRawBufferPointer(rebasing: raw[0..<total]))
        }
    }
}

/// Reads a frame's fields in order; every read checks the bytes left first, so no input can trap.
struct WireReader {
    private let bytes: UnsafeRawBufferPointer
    private(set) var offset: Int

    /// A reader after the message type byte.
    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        offset = 1
    }

    private mutating func take(_ count: Int) throws(HelperWireError) -> Range<Int> {
        guard count >= 0, bytes.count - offset >= count else {
            throw HelperWireError(.truncated, "the frame ends inside a field")
        }
        defer { offset += count }
        return offset..<(offset + count)
    }

    mutating func byte() throws(HelperWireError) -> UInt8 { bytes[try take(1).lowerBound] }

    mutating func bool() throws(HelperWireError) -> Bool {
        switch try byte() {
        case 0: return false
        case 1: return true
        case let other: throw HelperWireError(.unknownValue, "a boolean of value \(other)")
        }
    }

    mutating func uint32() throws(HelperWireError) -> UInt32 {
        try take(4).reduce(0) { $0 << 8 | UInt32(bytes[$1]) }
    }

    mutating func uint64() throws(HelperWireError) -> UInt64 {
        try take(8).reduce(0) { $0 << 8 | UInt64(bytes[$1]) }
    }

    /// A count, at most `HelperWire.maximumCount`.
    mutating func count() throws(HelperWireError) -> Int {
        let value = try uint32()
        guard value <= HelperWire.maximumCount else { throw HelperWireError(.tooLong, "a list of \(value) entries") }
        return Int(value)
    }

    /// The range of a byte string's bytes in the frame, at most `maximum` long.
    mutating func range(maximum: Int = HelperWire.maximumBytesLength) throws(HelperWireError) -> Range<Int> {
        let length = try uint32()
        guard length <= maximum else { throw HelperWireError(.tooLong, "a field of \(length) bytes") }
        return try take(Int(length))
    }

    mutating func bytes(maximum: Int = HelperWire.maximumBytesLength) throws(HelperWireError) -> [UInt8] {
        Array(UnsafeRawBufferPointer(rebasing: bytes[try range(maximum: maximum)]))
    }

    mutating func text() throws(HelperWireError) -> String {
        let raw = try bytes(maximum: HelperWire.maximumTextLength)
        guard let text = String(validating: raw, as: UTF8.self) else {
            throw HelperWireError(.invalidText, "a text field that is not UTF-8")
        }
        return text
    }

    /// Ends the reading: nothing may follow the last field.
    func finish() throws(HelperWireError) {
        guard offset == bytes.count else {
            throw HelperWireError(.trailingBytes, "\(bytes.count - offset) bytes after the last field")
        }
    }
}

extension HelperWire {
    /// Receives one frame's body into guarded memory, waiting at most until `deadline` (monotonic milliseconds;
    /// nil: no limit).
    ///
    /// A length past `maximumFrameLength` is refused before anything is allocated.
    static func receive(from socket: borrowing FileDescriptor, deadline: Int?) throws(HelperWireError) -> SecretBytes {
        var header = [UInt8](repeating: 0, count: 4)
        try header.withUnsafeMutableBytes { raw in
            Result { () throws(HelperWireError) in try readExactly(socket, into: raw, deadline: deadline, atStart: true)
            }
        }.get()
        let length = header.reduce(0) { $0 << 8 | Int($1) }
        guard (1...maximumFrameLength).contains(length) else {
            throw HelperWireError(.tooLong, "a frame of \(length) bytes")
        }
        let body = SecretBytes(count: length)
        try body.withUnsafeMutableBytes { (raw: UnsafeMutableRawBufferPointer) throws(HelperWireError) in
            try readExactly(socket, into: raw, deadline: deadline, atStart: false)
        }
        return body
    }

    private static func readExactly(
        _ socket: borrowing FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, deadline: Int?, atStart: Bool
    ) throws(HelperWireError) {
        var filled = 0
        while filled < buffer.count {
            if let deadline {
                let left = deadline - MonotonicClock.milliseconds
                let ready: Bool
                do throws(Errno) {
                    ready = left > 0 ? try socket.waitForInput(timeoutMilliseconds: Int32(clamping: left)) : false
                } catch  where error == .interrupted {
                    continue
                } catch {
                    throw HelperWireError(.io, "the helper's socket failed: \(error)")
                }
                guard ready else { throw HelperWireError(.timeout, "no answer in time") }
            }
            let count: Int
            do throws(Errno) {
                count = try socket.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]))
            } catch {
                if error == .connectionReset { throw HelperWireError(.closed, "the other side reset the socket") }
                throw HelperWireError(.io, "the helper's socket failed: \(error)")
            }
            guard count > 0 else {
                throw HelperWireError(
                    .closed, atStart && filled == 0 ? "the other side closed the socket" : "a frame was cut off")
            }
            filled += count
        }
    }
}

/// A secret copied out of a frame: the bytes at `range` of `frame`, in new guarded memory.
func copySecret(in frame: borrowing SecretBytes, at range: Range<Int>) -> SecretBytes {
    SecretBytes(count: range.count) { target in
        frame.withUnsafeBytes { source in target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[range])) }
    }
}
