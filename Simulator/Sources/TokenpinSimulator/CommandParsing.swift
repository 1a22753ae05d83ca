import TokenpinAPDU

/// Reads command APDUs the way real cards do: every ISO/IEC 7816-3 case, plus the encodings clients send that
/// are not strictly ISO but that cards take, and the status word cards answer for the rest.
///
/// Accepted beyond `CommandAPDU(parsing:)`:
/// - an extended-length header whose Lc is zero followed by a 2-byte Le (`CLA INS P1 P2 00 00 00 Le Le`):
///   case 2E, as if the zero Lc were absent;
/// - a short Lc and data followed by a 2-byte (extended) Le;
/// - an extended Lc and data followed by a 1-byte (short) Le.
///
/// Answered `67 00` (wrong length), as cards do: a header cut short, an Lc announcing more data than came,
/// bytes left after Le, and any extended-length encoding on a card that announces short APDUs only.
enum CommandParsing {
    /// A command, or the status word a card answers instead.
    enum Outcome: Equatable {
        case success(CommandAPDU)
        case failure(StatusWord)
    }

    /// The command `bytes` encode, or the status word a card answers to them.
    static func parse(_ bytes: [UInt8], extendedLength: Bool) -> Outcome {
        guard bytes.count >= 4 else { return .failure(.wrongLength) }
        let body = Array(bytes.dropFirst(4))
        let isExtended = body.count >= 3 && body[0] == 0x00
        if let command = try? CommandAPDU(parsing: bytes) {
            if isExtended && !extendedLength { return .failure(.wrongLength) }
            return .success(command)
        }
        var command = CommandAPDU(cla: bytes[0], ins: bytes[1], p1: bytes[2], p2: bytes[3])
        if isExtended {
            guard extendedLength else { return .failure(.wrongLength) }
            let nc = Int(body[1]) << 8 | Int(body[2])
            if nc == 0 && body.count == 5 {
                // Lc of zero, then Le: case 2E.
                command.le = Self.extendedLe(body[3], body[4])
                return .success(command)
            }
            if nc > 0 && body.count == 3 + nc + 1 {
                // Extended Lc, then a short Le.
                command.data = Array(body[3..<(3 + nc)])
                command.le = body[3 + nc] == 0 ? 256 : Int(body[3 + nc])
                return .success(command)
            }
            return .failure(.wrongLength)
        }
        let nc = Int(body[0])
        if nc > 0 && body.count == 1 + nc + 2 {
            // Short Lc, then an extended Le.
            guard extendedLength else { return .failure(.wrongLength) }
            command.data = Array(body[1..<(1 + nc)])
            command.le = Self.extendedLe(body[1 + nc], body[2 + nc])
            return .success(command)
        }
        return .failure(.wrongLength)
    }

    private static func extendedLe(_ high: UInt8, _ low: UInt8) -> Int {
        let value = Int(high) << 8 | Int(low)
        return value == 0 ? 65536 : value
    }
}
