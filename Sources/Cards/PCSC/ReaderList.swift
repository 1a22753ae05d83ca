/// Parsing of the reader names pcsc-lite returns.
///
/// `SCardListReaders` fills a *multi-string*: each reader name ends in a NUL, and one more NUL ends the
/// list. The buffer comes from pcscd, so the parser treats it as untrusted: a missing final NUL, a name cut
/// short, empty names, invalid UTF-8 and duplicates never crash it.
package enum ReaderList {
    /// The reader names in `buffer`, in order, without duplicates.
    ///
    /// Parsing stops at the empty name that ends the list; a last name without its NUL (a truncated buffer)
    /// is kept. Invalid UTF-8 is replaced with U+FFFD, and control characters are dropped from names.
    package static func parse(_ buffer: [UInt8]) -> [String] {
        var names: [String] = []
        var current: [UInt8] = []
        for byte in buffer {
            if byte == 0 {
                if current.isEmpty { break }
                let name = decodeName(current)
                if !name.isEmpty, !names.contains(name) { names.append(name) }
                current.removeAll(keepingCapacity: true)
            } else {
                current.append(byte)
            }
        }
        if !current.isEmpty {
            let name = decodeName(current)
            if !name.isEmpty, !names.contains(name) { names.append(name) }
        }
        return names
    }

    /// One name: stops at the first NUL, repairs invalid UTF-8 and drops control characters.
    static func decodeName(_ bytes: [UInt8]) -> String {
        let end = bytes.firstIndex(of: 0) ?? bytes.endIndex
        let text = String(decoding: bytes[..<end], as: UTF8.self)
        return String(String.UnicodeScalarView(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }))
    }
}
