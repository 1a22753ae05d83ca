/// How a connection shares the card with other processes.
///
/// The raw values are pcsc-lite's `SCARD_SHARE_` constants.
package enum ShareMode: UInt32, Sendable {
    /// `SCARD_SHARE_SHARED`: other processes may connect too; transactions keep sequences together.
    case shared = 0x0002
    /// `SCARD_SHARE_EXCLUSIVE`: no other process may connect while this connection is open.
    case exclusive = 0x0001
}

/// The transmission protocols a connection may use.
///
/// The raw values are pcsc-lite's `SCARD_PROTOCOL_` bits.
package struct CardProtocols: OptionSet, Sendable, Hashable {
    /// The protocol bits.
    package let rawValue: UInt32
    /// Creates a set from protocol bits.
    package init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `SCARD_PROTOCOL_T0`: character-oriented T=0.
    package static let t0 = CardProtocols(rawValue: 0x0001)
    /// `SCARD_PROTOCOL_T1`: block-oriented T=1, what USB tokens speak.
    package static let t1 = CardProtocols(rawValue: 0x0002)
    /// T=0 or T=1, whichever the card and reader agree on.
    package static let any: CardProtocols = [.t0, .t1]
}

/// What happens to the card when a connection or transaction ends.
///
/// The raw values are pcsc-lite's `SCARD_*_CARD` dispositions.
package enum CardDisposition: UInt32, Sendable {
    /// `SCARD_LEAVE_CARD`: the card keeps its state (selected application, verified PINs).
    case leave = 0x0000
    /// `SCARD_RESET_CARD`: the card is reset; selections and verified PINs are gone.
    case reset = 0x0001
    /// `SCARD_UNPOWER_CARD`: the card is powered down.
    case unpower = 0x0002
}

/// The state bits pcscd reports for a reader (`SCARD_STATE_`).
///
/// The upper 16 bits of pcsc-lite's value (an event counter) are not part of this set.
package struct ReaderState: OptionSet, Sendable, Hashable {
    /// The state bits.
    package let rawValue: UInt32
    /// Creates a set from state bits; the event counter bits are dropped.
    package init(rawValue: UInt32) { self.rawValue = rawValue & 0xFFFF }

    /// `SCARD_STATE_IGNORE`: the reader is to be ignored.
    package static let ignore = ReaderState(rawValue: 0x0001)
    /// `SCARD_STATE_CHANGED`: the state differs from the one the caller knew.
    package static let changed = ReaderState(rawValue: 0x0002)
    /// `SCARD_STATE_UNKNOWN`: the reader is not known (any more).
    package static let unknown = ReaderState(rawValue: 0x0004)
    /// `SCARD_STATE_UNAVAILABLE`: the state is not available.
    package static let unavailable = ReaderState(rawValue: 0x0008)
    /// `SCARD_STATE_EMPTY`: there is no card in the reader.
    package static let empty = ReaderState(rawValue: 0x0010)
    /// `SCARD_STATE_PRESENT`: a card is in the reader.
    package static let present = ReaderState(rawValue: 0x0020)
    /// `SCARD_STATE_ATRMATCH`: the card's ATR matches a requested one.
    package static let atrMatch = ReaderState(rawValue: 0x0040)
    /// `SCARD_STATE_EXCLUSIVE`: another process holds the card exclusively.
    package static let exclusive = ReaderState(rawValue: 0x0080)
    /// `SCARD_STATE_INUSE`: the card is in use by some process (shared).
    package static let inUse = ReaderState(rawValue: 0x0100)
    /// `SCARD_STATE_MUTE`: the card does not answer (no ATR).
    package static let mute = ReaderState(rawValue: 0x0200)
    /// `SCARD_STATE_UNPOWERED`: the card is not powered.
    package static let unpowered = ReaderState(rawValue: 0x0400)
}

/// One reader and the card in it, as `SCardGetStatusChange` reports them.
package struct ReaderStatus: Sendable, Equatable {
    /// The reader's name, as `SCardListReaders` gives it.
    package var name: String
    /// The reader's state bits.
    package var state: ReaderState
    /// The ATR of the card in the reader; empty without a card.
    package var atr: [UInt8]

    /// Creates a status.
    package init(name: String, state: ReaderState, atr: [UInt8]) {
        self.name = name
        self.state = state
        self.atr = atr
    }

    /// Whether a card is in the reader.
    package var isCardPresent: Bool { state.contains(.present) }
    /// Whether another process holds the card exclusively: connecting gives a sharing violation.
    package var isExclusivelyUsed: Bool { state.contains(.exclusive) }
    /// Whether the card is in the reader but does not answer.
    package var isMute: Bool { state.contains(.mute) }
}

/// Cancels a blocking `SCardGetStatusChange` from another thread.
///
/// A copyable, sendable token for one context. Cancelling after the context was released is harmless
/// (pcscd answers `invalidHandle`, which `cancel()` ignores).
package struct PCSCCanceller: Sendable {
    let context: Int

    /// Makes a wait on the context return; the waiting call then throws `PCSCError.cancelled`.
    ///
    /// The corresponding C function is `SCardCancel`.
    package func cancel() {
        try? PCSCLibrary.cancel(context)
    }
}

extension Duration {
    /// The duration as a pcsc-lite timeout in milliseconds, rounded up, clamped below `INFINITE`.
    var pcscMilliseconds: UInt32 {
        let (seconds, attoseconds) = components
        guard seconds >= 0, attoseconds >= 0 || seconds > 0 else { return 0 }
        let milliseconds = seconds.multipliedReportingOverflow(by: 1000)
        guard !milliseconds.overflow else { return PCSCLibrary.infiniteTimeout - 1 }
        let total = milliseconds.partialValue + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return UInt32(clamping: max(0, min(total, Int64(PCSCLibrary.infiniteTimeout - 1))))
    }
}
