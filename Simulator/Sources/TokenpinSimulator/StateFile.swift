import FoundationEssentials
internal import TokenpinSystem

/// The JSON file that makes the simulated card the same card across restarts.
///
/// Writes are atomic and durable (`AtomicFile.replace`): a temporary file in the same directory, created
/// exclusively and never through a symlink, `fsync`, `rename` over the old file, `fsync` of the directory; mode
/// 0600. A failure of any step, the directory sync included, is an error. A file that exists but does not decode is an error naming the file, never a
/// silent factory reset. Keys are sorted and byte fields are base64, so the file is stable and diffable.
struct StateFile: Sendable {
    /// The path of the state file.
    let path: String

    /// Reads the state, or returns nil when there is no file yet.
    func load() throws(SimulatorError) -> CardState? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SimulatorError(.unreadableStateFile, "cannot read the card state file \(path)")
        }
        let state: CardState
        do {
            state = try JSONDecoder().decode(CardState.self, from: data)
        } catch {
            throw SimulatorError(
                .corruptStateFile,
                "the card state file \(path) is corrupt or truncated (\(Self.reason(error))); "
                    + "start with --reset to make the card factory-new")
        }
        if let problem = state.validationProblem() {
            throw SimulatorError(.corruptStateFile, "the card state file \(path) is invalid: \(problem)")
        }
        return state
    }

    /// Replaces the file with `state`, atomically and durably.
    func save(_ state: CardState) throws(SimulatorError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let bytes: [UInt8]
        do {
            bytes = try Array(encoder.encode(state)) + [0x0A]
        } catch {
            throw SimulatorError(.unwritableStateFile, "cannot encode the card state for \(path)")
        }
        do {
            try AtomicFile.replace(path: path, contents: bytes, mode: 0o600)
        } catch {
            throw SimulatorError(.unwritableStateFile, "cannot write the card state file \(path): \(error)")
        }
    }

    private static func reason(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context): return context.debugDescription
        case DecodingError.keyNotFound(let key, _): return "missing \(key.stringValue)"
        case DecodingError.typeMismatch(_, let context):
            return "wrong type at \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        case DecodingError.valueNotFound(_, let context):
            return "missing value at \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        default: return "not JSON"
        }
    }
}
