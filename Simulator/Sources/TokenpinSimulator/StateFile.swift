import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The JSON file that makes the simulated card the same card across restarts.
///
/// Writes are atomic: a temporary file in the same directory, `fsync`, `rename` over the old file, `fsync` of
/// the directory; mode 0600. A file that exists but does not decode is an error naming the file, never a
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
            throw SimulatorError(.corruptStateFile,
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
        let directory = (path as NSString).deletingLastPathComponent
        let directoryPath = directory.isEmpty ? "." : directory
        let temporary = directoryPath + "/." + (path as NSString).lastPathComponent + ".tmp.\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw failure("cannot create \(temporary)") }
        var written = 0
        while written < bytes.count {
            let result = bytes[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if result < 0 && errno == EINTR { continue }
            guard result > 0 else {
                close(descriptor)
                unlink(temporary)
                throw failure("cannot write \(temporary)")
            }
            written += result
        }
        guard fsync(descriptor) == 0 else {
            close(descriptor)
            unlink(temporary)
            throw failure("cannot fsync \(temporary)")
        }
        close(descriptor)
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw failure("cannot rename \(temporary) to \(path)")
        }
        let directoryDescriptor = open(directoryPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryDescriptor >= 0 {
            _ = fsync(directoryDescriptor)
            close(directoryDescriptor)
        }
    }

    private func failure(_ what: String) -> SimulatorError {
        SimulatorError(.unwritableStateFile, "\(what): \(String(cString: strerror(errno)))")
    }

    private static func reason(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context): return context.debugDescription
        case DecodingError.keyNotFound(let key, _): return "missing \(key.stringValue)"
        case DecodingError.typeMismatch(_, let context): return "wrong type at \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        case DecodingError.valueNotFound(_, let context): return "missing value at \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        default: return "not JSON"
        }
    }
}
