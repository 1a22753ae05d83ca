/// A store that cannot be used safely: always names the file, never leads to overwriting or "not enrolled".
public struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public enum Code: String, Sendable, Equatable {
        /// Others can write the directory or file, or it belongs to another user, or it is a symlink.
        case insecure
        /// The record does not parse or fails its structural checks (truncated, edited, foreign).
        case corrupt
        /// The record was written by a newer (or unknown) format version.
        case unknownVersion
        /// Reading, writing, syncing or renaming failed.
        case io
        /// The operating system refused access.
        case permissionDenied
        /// A user name that cannot name a record.
        case invalidUser
        /// Another process held the record's lock for longer than the store waits (`lockWaitSeconds`).
        case busy
    }

    /// What is wrong.
    public var code: Code
    /// The file or directory concerned.
    public var path: String
    /// A human description.
    public var detail: String

    /// Creates an error.
    public init(_ code: Code, path: String, _ detail: String) {
        self.code = code
        self.path = path
        self.detail = detail
    }

    public var description: String { "\(path): \(detail)" }
}
