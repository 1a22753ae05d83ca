/// What a connection knows about the PINs a card holds verified, and how to drop them without a reset.
///
/// A transport feeds it every command and answer (`note(command:answer:)`). A successful VERIFY (`20`)
/// records its key reference (P2); a successful CHANGE REFERENCE DATA (`24`) or RESET RETRY COUNTER
/// (`2C`) marks the card as needing a reset, since which references those leave verified differs between
/// cards. At the end of a transaction `clear(using:)` sends VERIFY with P1 = `FF` and no data (ISO/IEC
/// 7816-4:2013 §11.5.6; OpenPGP card 3.x, YubiKey 5.6+, PIV) for each recorded reference: when every
/// answer is `9000` the card dropped the state itself and can be left as it is (other clients, such as
/// gpg's scdaemon, keep theirs); anything else means the caller must reset the card.
public struct VerifiedState: Sendable, Equatable {
    /// The key references verified with VERIFY, in the order first seen.
    public private(set) var references: [UInt8] = []
    /// A PIN may be verified in a way the FF VERIFY cannot be trusted to undo: only a reset helps.
    public private(set) var needsReset = false

    /// Nothing verified yet.
    public init() {}

    /// Whether the card may hold a verified PIN.
    public var isEmpty: Bool { references.isEmpty && !needsReset }

    /// Records what a command left verified, given the card's answer.
    public mutating func note(command: [UInt8], answer: [UInt8]) {
        guard command.count >= 4, answer.count >= 2,
            answer[answer.count - 2] == 0x90, answer[answer.count - 1] == 0x00
        else { return }
        switch command[1] {
        case Self.verify where command[2] == Self.clearStateP1:
            references.removeAll { $0 == command[3] }
        case Self.verify:
            if !references.contains(command[3]) { references.append(command[3]) }
        case Self.changeReferenceData, Self.resetRetryCounter:
            needsReset = true
        default:
            break
        }
    }

    /// Marks the card as needing a reset (a caller that knows more than the APDUs show).
    public mutating func requireReset() { needsReset = true }

    /// Forgets everything: the card was reset.
    public mutating func forget() {
        references.removeAll()
        needsReset = false
    }

    /// The VERIFY commands that clear the recorded references: `00 20 FF <ref>`, no data.
    public var clearingCommands: [[UInt8]] {
        references.map { [0x00, Self.verify, Self.clearStateP1, $0] }
    }

    /// Asks the card to drop every recorded verified PIN with VERIFY P1 = `FF`.
    ///
    /// Returns `true` when nothing is left verified (every answer was `9000`, or nothing was recorded): the
    /// card can be left as it is. Returns `false` when a reset is still needed: `needsReset` was set, the
    /// card refused one of the commands (older YubiKeys, cards without the feature), or `transmit` threw.
    /// Stops at the first refusal.
    public mutating func clear(using transmit: ([UInt8]) throws(CardTransportError) -> [UInt8]) -> Bool {
        guard !needsReset else { return false }
        for command in clearingCommands {
            guard let answer = try? transmit(command), answer == [0x90, 0x00] else { return false }
            references.removeAll { $0 == command[3] }
        }
        return true
    }

    /// `20`: VERIFY.
    static let verify: UInt8 = 0x20
    /// `24`: CHANGE REFERENCE DATA.
    static let changeReferenceData: UInt8 = 0x24
    /// `2C`: RESET RETRY COUNTER.
    static let resetRetryCounter: UInt8 = 0x2C
    /// VERIFY's P1 that clears the verification state of the reference in P2.
    static let clearStateP1: UInt8 = 0xFF
}
