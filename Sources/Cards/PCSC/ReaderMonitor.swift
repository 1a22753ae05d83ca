package import TokenpinAPDU

/// Watches readers and cards come and go.
///
/// Owns a PC/SC context of its own. Takes a snapshot when created; each `waitForEvents(timeout:)` blocks
/// until something differs from what it last reported, then reports it. Readers arriving and leaving come
/// from pcsc-lite's `\\?PnP?\Notification` pseudo reader. Blocking: call it from a thread of your own;
/// `canceller` stops a wait from another thread.
package struct ReaderMonitor: ~Copyable {
    private let context: PCSCContext
    /// The last reported state of each reader, with pcsc-lite's event counter in the upper 16 bits.
    private var known: [(name: String, state: UInt32, atr: [UInt8])]
    /// The plug-and-play pseudo reader's state (pcsc-lite keeps the reader count in its upper bits).
    private var plugAndPlayState: UInt32 = 0
    private var plugAndPlaySupported = true

    /// Opens a context and takes a snapshot of the readers and their cards.
    ///
    /// The corresponding C functions are `SCardEstablishContext`, `SCardListReaders` and
    /// `SCardGetStatusChange`.
    package init() throws(PCSCError) {
        let context = try PCSCContext()
        let snapshot = try context.rawStates(of: context.readers())
        var probe = [PCSCLibrary.ReaderStateEntry(reader: PCSCLibrary.plugAndPlayReaderName, currentState: 0)]
        _ = try PCSCLibrary.getStatusChange(context.handle, timeout: 0, entries: &probe)
        known = snapshot.map { ($0.reader, $0.eventState & ~ReaderState.changed.rawValue, $0.atr) }
        if probe[0].eventState & ReaderState.unknown.rawValue != 0 {
            plugAndPlaySupported = false
        } else {
            plugAndPlayState = probe[0].eventState & ~ReaderState.changed.rawValue
        }
        self.context = context
    }

    /// The readers and their cards as last reported.
    package var readers: [ReaderStatus] {
        known.map { ReaderStatus(name: $0.name, state: ReaderState(rawValue: $0.state), atr: $0.atr) }
    }

    /// A token that stops a `waitForEvents(timeout:)` from another thread (it then throws `.cancelled`).
    package var canceller: PCSCCanceller { context.canceller }

    /// Waits until a reader is added or removed or a card is inserted or removed, or `timeout` passes.
    ///
    /// Returns the events in the order they were noticed; empty when the timeout passed first. A card pulled
    /// and put back between two calls reports `cardRemoved` then `cardInserted`. Changes that are not
    /// events (another process connecting) are absorbed without returning. `nil` waits forever.
    /// The corresponding C function is `SCardGetStatusChange`.
    package mutating func waitForEvents(timeout: Duration?) throws(PCSCError) -> [ReaderEvent] {
        let clock = ContinuousClock()
        let deadline = timeout.map { clock.now.advanced(by: $0) }
        while true {
            var wait = PCSCLibrary.infiniteTimeout
            if let deadline {
                let remaining = clock.now.duration(to: deadline)
                wait = remaining > .zero ? remaining.pcscMilliseconds : 0
            }
            if !plugAndPlaySupported {
                // Without the pseudo reader, look at the reader list at least once a second.
                wait = min(wait, 1000)
            }
            var entries = known.map { PCSCLibrary.ReaderStateEntry(reader: $0.name, currentState: $0.state) }
            if plugAndPlaySupported {
                entries.append(
                    PCSCLibrary.ReaderStateEntry(
                        reader: PCSCLibrary.plugAndPlayReaderName,
                        currentState: plugAndPlayState))
            }
            let changed: Bool
            if entries.isEmpty {
                changed = true  // nothing to wait on: fall through to the reader list
            } else {
                changed = try PCSCLibrary.getStatusChange(context.handle, timeout: wait, entries: &entries)
            }
            var events: [ReaderEvent] = []
            if changed {
                events = try absorb(entries)
            } else if !plugAndPlaySupported {
                events = try compareReaderList()
            }
            if !events.isEmpty { return events }
            if let deadline, clock.now >= deadline { return [] }
        }
    }

    /// Turns changed entries into events and updates the snapshot.
    private mutating func absorb(_ entries: [PCSCLibrary.ReaderStateEntry]) throws(PCSCError) -> [ReaderEvent] {
        var events: [ReaderEvent] = []
        var listChanged = false
        for entry in entries {
            let newState = entry.eventState & ~ReaderState.changed.rawValue
            if entry.reader == PCSCLibrary.plugAndPlayReaderName {
                if entry.eventState & ReaderState.changed.rawValue != 0 {
                    listChanged = true
                    plugAndPlayState = newState
                }
                continue
            }
            guard entry.eventState & ReaderState.changed.rawValue != 0,
                let index = known.firstIndex(where: { $0.name == entry.reader })
            else { continue }
            let old = known[index].state
            if entry.eventState & (ReaderState.unknown.rawValue | ReaderState.ignore.rawValue) != 0 {
                if old & ReaderState.present.rawValue != 0 {
                    events.append(ReaderEvent(.cardRemoved, reader: entry.reader))
                }
                events.append(ReaderEvent(.readerRemoved, reader: entry.reader))
                known.remove(at: index)
                continue
            }
            events += Self.cardEvents(reader: entry.reader, old: old, new: newState)
            known[index] = (entry.reader, newState, entry.atr)
        }
        if listChanged || entries.isEmpty {
            events += try compareReaderList()
        }
        return events
    }

    /// Card events between two states of one reader.
    static func cardEvents(reader: String, old: UInt32, new: UInt32) -> [ReaderEvent] {
        let present = ReaderState.present.rawValue
        let wasPresent = old & present != 0
        let isPresent = new & present != 0
        switch (wasPresent, isPresent) {
        case (false, true):
            return [ReaderEvent(.cardInserted, reader: reader)]
        case (true, false):
            return [ReaderEvent(.cardRemoved, reader: reader)]
        case (true, true) where old >> 16 != new >> 16:
            // pcsc-lite counts insertions and removals in the upper 16 bits: the card was swapped.
            return [ReaderEvent(.cardRemoved, reader: reader), ReaderEvent(.cardInserted, reader: reader)]
        default:
            return []
        }
    }

    /// Compares the reader list with the snapshot: readers added (with their cards) and removed.
    private mutating func compareReaderList() throws(PCSCError) -> [ReaderEvent] {
        let names = try context.readers()
        var events: [ReaderEvent] = []
        for gone in known where !names.contains(gone.name) {
            if gone.state & ReaderState.present.rawValue != 0 {
                events.append(ReaderEvent(.cardRemoved, reader: gone.name))
            }
            events.append(ReaderEvent(.readerRemoved, reader: gone.name))
        }
        known.removeAll { !names.contains($0.name) }
        let added = names.filter { name in !known.contains { $0.name == name } }
        for entry in try context.rawStates(of: added) {
            events.append(ReaderEvent(.readerAdded, reader: entry.reader))
            if entry.eventState & ReaderState.present.rawValue != 0 {
                events.append(ReaderEvent(.cardInserted, reader: entry.reader))
            }
            known.append((entry.reader, entry.eventState & ~ReaderState.changed.rawValue, entry.atr))
        }
        return events
    }
}
