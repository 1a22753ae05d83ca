/// Something that happened to a reader or its card: what PC/SC monitoring reports and the daemon publishes.
public struct ReaderEvent: Sendable, Hashable, CustomStringConvertible {
    /// What happened; the raw value is the `watch` event's name.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A reader was plugged in (a USB token counts as a reader with its card inside).
        case readerAdded
        /// A reader was unplugged.
        case readerRemoved
        /// A card was inserted into a reader (or a virtual card attached).
        case cardInserted
        /// A card was removed from a reader.
        case cardRemoved
    }

    /// What happened.
    public var kind: Kind
    /// The reader it happened to.
    public var reader: String

    /// Creates an event.
    public init(_ kind: Kind, reader: String) {
        self.kind = kind
        self.reader = reader
    }

    public var description: String { "\(kind.rawValue) \(reader)" }
}
