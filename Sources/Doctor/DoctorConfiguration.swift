import FoundationEssentials
import TokenpinArguments
internal import TokenpinCore
import TokenpinProtocol
import TokenpinReaders
internal import TokenpinService

/// The configuration files and the record, as tokenpin and tokenpind would read them.
extension Doctor {
    // MARK: Configuration

    func configuration() -> [Finding] {
        var findings: [Finding] = []
        var settings = SettingOrigins()
        var sound = true
        let files = setup.configurationFiles.filter { FileManager.default.fileExists(atPath: $0) }
        for file in files {
            do {
                let entries = try Configuration.entries(file: file)
                var scratch = Configuration()
                try scratch.apply(file: file)
                settings.add(entries, from: file)
            } catch {
                sound = false
                findings.append(unsoundFile(file, error))
            }
        }
        if sound {
            do {
                _ = try Configuration.load(files: files, explicitFile: nil)
            } catch {
                sound = false
                findings.append(Finding("config", .error, error.description, exitCode: .configuration))
            }
        }
        let details = settings.lines
        if sound {
            findings.insert(
                Finding(
                    "config", .ok,
                    files.isEmpty
                        ? "no configuration file: every setting is its default"
                        : "configuration sound: " + files.joined(separator: ", "), details: details), at: 0)
        } else if !details.isEmpty {
            findings.append(Finding("config", .info, "settings read before the error", details: details))
        }
        return findings
    }

    /// A file that cannot be read as configuration: the error (with the closest key to an unknown one), and for a
    /// file under /etc, what tokenpind does meanwhile.
    private func unsoundFile(_ file: String, _ error: ConfigError) -> Finding {
        var message = error.description
        if error.message.hasPrefix("unknown key `"), let key = error.message.split(separator: "`").dropFirst().first {
            message += Suggestion.didYouMean(String(key), among: Configuration.keys)
        }
        return Finding(
            "config", .error, message,
            fix: file.hasPrefix(setup.path("/etc/"))
                ? "fix the line; tokenpind keeps its old settings until it reads a sound file (SIGHUP)"
                : nil,
            exitCode: .configuration)
    }

    /// Where each setting came from, in the order the keys were first set: the file and line that won and those it
    /// overrode.
    private struct SettingOrigins {
        private var origin: [String: (value: String, source: String, overrides: [String])] = [:]
        private var order: [String] = []

        mutating func add(_ entries: [Configuration.Entry], from file: String) {
            for entry in entries {
                let source = "\(file):\(entry.line)"
                if let previous = origin[entry.key] {
                    origin[entry.key] = (entry.value, source, previous.overrides + [previous.source])
                } else {
                    origin[entry.key] = (entry.value, source, [])
                    order.append(entry.key)
                }
            }
        }

        /// `key = value  (file:line, over file:line, ...)`, one per key.
        var lines: [String] {
            order.compactMap { key -> String? in
                guard let setting = origin[key] else { return nil }
                let over = setting.overrides.isEmpty ? "" : ", over " + setting.overrides.joined(separator: ", ")
                return "\(key) = \(setting.value)  (\(setting.source)\(over))"
            }
        }
    }

    // MARK: The record

    func record() -> [Finding] {
        if setup.throughDaemon {
            do {
                let status = try DaemonClient(socketPath: setup.socket).perform(Operation.Status())
                return [recordFinding(status, where: "in tokenpind")]
            } catch {
                return [Finding("record", .warning, "tokenpind's status: \(error.message)", exitCode: ExitCode(error))]
            }
        }
        do {
            guard try setup.store.exists(), let record = try setup.store.load(user: setup.user) else {
                return [
                    Finding(
                        "record", .info, "no record for \(setup.user) in \(setup.store.directory)",
                        fix: "tokenpin enrol")
                ]
            }
            if let problem = record.structuralProblem {
                return [
                    Finding(
                        "record", .error, "\(setup.store.recordPath(for: setup.user)): \(problem)",
                        exitCode: .dataError)
                ]
            }
            return [
                recordFinding(
                    PINService(store: setup.store, configuration: Configuration(), user: setup.user).statusOrNil(),
                    where: "local")
            ]
        } catch {
            return [Finding("record", .error, error.description, exitCode: ExitCode(.store(error)))]
        }
    }

    func recordFinding(_ status: StatusReport?, where place: String) -> Finding {
        guard let status, status.enrolled else {
            return Finding("record", .info, "no record for \(setup.user) (\(place))", fix: "tokenpin enrol")
        }
        let types = status.types.filter(\.enabled).map { type in
            type.type.rawValue + (type.serial.map { " (card \(cardLabel(serial: $0)))" } ?? "")
        }
        let summary =
            "record of \(status.user) (\(place), \(status.recordPath)): sound; \(types.joined(separator: " and ")); "
            + "mode \(status.mode?.rawValue ?? "either"), fallback \(status.fallback?.rawValue ?? "allow"); "
            + "\(status.remaining ?? 0) of \(status.maximum ?? 0) tries left"
        if status.locked {
            return Finding(
                "record", .warning, summary + ": the PIN is locked", fix: "tokenpin reset (the recovery key)",
                exitCode: .locked)
        }
        return Finding("record", .ok, summary)
    }
}
