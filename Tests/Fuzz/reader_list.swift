// Fuzz target for what pcscd hands the PC/SC layer (Sources/Cards/PCSC): the reader multi-string
// (`SCardListReaders`) and a card's ATR with its historical bytes. Both come from another process (and the ATR from
// the card), so no byte string may trap, and whatever parses must hold what the parser promises.
// Built by Tests/Fuzz/fuzz.sh with `swiftc -sanitize=fuzzer,address`, from ReaderList.swift and ATR.swift.
internal import TokenpinAPDU

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzReaderList(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))

    // The names: none empty, none twice, no control character; written back as a multi-string they parse to
    // themselves, and there are never more of them than the buffer has NUL-separated pieces.
    let names = ReaderList.parse(bytes)
    precondition(Set(names).count == names.count, "a reader name was listed twice")
    for name in names {
        precondition(!name.isEmpty, "an empty reader name was listed")
        precondition(
            name.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7F },
            "a reader name kept a control character")
    }
    precondition(names.count <= bytes.split(separator: 0).count, "more names than pieces")
    let written: [UInt8] = names.flatMap { name -> [UInt8] in Array(name.utf8) + [0] } + [0]
    precondition(ReaderList.parse(written) == names, "the names written back parsed to other names")

    // The ATR: it keeps the bytes it was given, holds as many historical bytes as T0 announces, found among its
    // bytes after T0, and offers only protocols T=0 to T=15, each once.
    if let atr = ATR(bytes) {
        precondition(atr.bytes == bytes, "the ATR changed its bytes")
        precondition(atr.historicalBytes.count == Int(bytes[1] & 0x0F), "the historical bytes miscounted")
        let count = atr.historicalBytes.count
        precondition(
            (2...(bytes.count - count)).contains { Array(bytes[$0..<($0 + count)]) == atr.historicalBytes },
            "the historical bytes are not a run of the ATR's bytes after T0")
        precondition(!atr.protocols.isEmpty && atr.protocols.allSatisfy { (0...15).contains($0) })
        precondition(Set(atr.protocols).count == atr.protocols.count, "a protocol was offered twice")
        _ = atr.lengthCapabilities
    }
    _ = HistoricalBytes.lengthCapabilities(bytes)
    return 0
}
