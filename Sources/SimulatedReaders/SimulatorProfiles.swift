import FoundationEssentials
import Synchronization
package import TokenpinCore
import TokenpinReaders
package import TokenpinService
package import TokenpinSimulator
internal import TokenpinSystem

// The in-process simulated card as any of tokenpin-sim's profiles (`TOKENPIN_SIM_PROFILE`). A card is made as a
// profile once, when its state file is created; the profile is recorded next to the state file
// (`sim-card.json.profile`) so that the card stays that device on every later run, whatever is asked then.

extension SimulatorCards {
    /// The environment variable that names the profile a new simulated card is made as.
    package static let profileVariable = "TOKENPIN_SIM_PROFILE"

    /// The profile `TOKENPIN_SIM_PROFILE` names (`SimulatedProfile.names`, as `tokenpin-sim --profile` takes
    /// them); `openpgp` when it is unset or empty.
    ///
    /// - Throws: `ConfigError` naming the variable and the profiles there are, for any other value (exit 78).
    package static func requestedProfile(environment: [String: String]) throws(ConfigError) -> SimulatedProfile {
        guard let name = environment[profileVariable], !name.isEmpty else { return .openpgp }
        guard let profile = SimulatedProfile(name: name) else {
            throw ConfigError(
                file: profileVariable, line: 0,
                message: "unknown simulated card profile `\(name)`; choose one of "
                    + SimulatedProfile.names.joined(separator: ", "))
        }
        return profile
    }

    private static let cards = Mutex<[String: InProcessReaders]>([:])

    /// The simulated card whose state is in `stateFile`, opened once per process.
    ///
    /// A card whose state file does not exist yet is made as `profile` (its factory keys, device traits and
    /// applications), and the profile is recorded beside the file. A card that exists keeps the profile it was
    /// made with: the recorded one, or `openpgp` for a card made before profiles were recorded; `profile` is
    /// then not used.
    package static func shared(stateFile: String, profile: SimulatedProfile) -> any CardReaders {
        cards.withLock { cards -> any CardReaders in
            if let existing = cards[stateFile] { return existing }
            do {
                let made = try SimulatorReaders.open(stateFile: stateFile, profile: profile)
                cards[stateFile] = made
                return made
            } catch {
                return UnavailableReaders(error: error as? ServiceError ?? .tokenUnavailable("\(error)"))
            }
        }
    }
}

extension SimulatorReaders {
    /// The file beside `stateFile` that records the profile the card was made as.
    package static func profileFile(for stateFile: String) -> String { stateFile + ".profile" }

    /// The profile of the card in `stateFile`: the recorded one when the card exists (`openpgp` when none was
    /// recorded), else `requested`, which is then recorded.
    ///
    /// - Throws: `.tokenUnavailable` when the record names no profile or cannot be written.
    package static func profile(of stateFile: String, requested: SimulatedProfile) throws(ServiceError)
        -> SimulatedProfile
    {
        let recordFile = profileFile(for: stateFile)
        if FileManager.default.fileExists(atPath: stateFile) {
            guard FileManager.default.fileExists(atPath: recordFile) else { return .openpgp }
            guard let bytes = FileManager.default.contents(atPath: recordFile), bytes.count <= 64,
                let line = String(decoding: bytes, as: UTF8.self).split(separator: "\n").first,
                let profile = SimulatedProfile(name: line.trimmingBlanks())
            else {
                throw .tokenUnavailable(
                    "the simulated card's profile file \(recordFile) names no profile; "
                        + "write one of \(SimulatedProfile.names.joined(separator: ", ")) in it, or remove it for openpgp"
                )
            }
            return profile
        }
        do {
            try AtomicFile.replace(path: recordFile, contents: Array((requested.rawValue + "\n").utf8), mode: 0o600)
        } catch {
            throw .tokenUnavailable("cannot write the simulated card's profile file \(recordFile): \(error)")
        }
        return requested
    }

    /// Opens the simulated card whose state is in `stateFile`, or makes it as `profile` when there is none (see
    /// `profile(of:requested:)`).
    package static func open(stateFile: String, profile requested: SimulatedProfile) throws(ServiceError)
        -> InProcessReaders
    {
        let directory = Paths.parent(of: stateFile)
        try? FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let profile = try profile(of: stateFile, requested: requested)
        do {
            return readers(try SimulatedCard(stateFile: stateFile, profile: profile))
        } catch {
            throw .tokenUnavailable("the simulated card cannot start: \(error)")
        }
    }
}
