import FoundationEssentials
internal import TokenpinSystem

/// The file and line a setting came from.
public struct SettingSource: Sendable, Equatable {
    /// The configuration file.
    public var file: String
    /// The line, from 1.
    public var line: Int

    /// Creates a source.
    public init(file: String, line: Int) {
        self.file = file
        self.line = line
    }
}

/// A configuration file that cannot be used: names the file and line.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file.
    public var file: String
    /// The 1-based line, or 0 for the file as a whole.
    public var line: Int
    /// What is wrong.
    public var message: String

    /// Creates an error.
    public init(file: String, line: Int, message: String) {
        self.file = file
        self.line = line
        self.message = message
    }

    public var description: String { line > 0 ? "\(file):\(line): \(message)" : "\(file): \(message)" }
}

/// Terminal colours and prompt texts: the seeds' appearance options.
public struct Appearance: Sendable, Equatable {
    /// Whether to colour output: `auto` (when writing to a terminal and `NO_COLOR` is unset), `always`, `never`.
    public enum ColorChoice: String, Sendable, CaseIterable { case auto, always, never }

    /// Colour use.
    public var color: ColorChoice = .auto
    /// The prompt text colour (the seeds' `headerTitleColor`).
    public var promptColor: String = "bold"
    /// The colour of the dots shown per typed character (`passcodeDotsColor`).
    public var dotsColor: String = "cyan"
    /// The colour of errors and wrong-PIN alerts (`alertTextColor`).
    public var errorColor: String = "red"
    /// The colour of warnings such as "last try".
    public var warningColor: String = "yellow"
    /// The colour of success messages.
    public var successColor: String = "green"
    /// The character echoed per typed PIN character.
    public var dot: String = "•"
    /// Prompt: the PIN (`%u` is replaced with the user; the tries left follow).
    public var promptPIN: String = "tokenpin PIN for %u"
    /// Prompt: a new PIN (`%u`: the user).
    public var promptNewPIN: String = "New tokenpin PIN for %u"
    /// Prompt: the new PIN again (`%u`: the user).
    public var promptConfirmPIN: String = "New tokenpin PIN again"
    /// Prompt: the current PIN (`%u`: the user; the tries left follow).
    public var promptCurrentPIN: String = "Current tokenpin PIN for %u"
    /// Prompt: the recovery key (`%u`: the user).
    public var promptRecoveryKey: String = "Recovery key for %u"
    /// Prompt: the card PIN (`%s` is replaced with the card and its tries left).
    public var promptCardPIN: String = "Card PIN for %s"

    /// The defaults.
    public init() {}

}

/// A colour setting's value (`red`, `bright-blue`, `bold`, `208`): what it means, not how a terminal shows it
/// (the CLI maps it to ANSI escapes).
public enum TextColour: Sendable, Equatable {
    /// One of the eight basic colours, or the terminal's default.
    case basic(BasicColour)
    /// The bright variant of a basic colour (`bright-red`).
    case bright(BasicColour)
    /// A text attribute.
    case attribute(TextAttribute)
    /// An entry of the 256-colour palette (`0`-`255`).
    case palette(UInt8)

    /// The eight colours and the terminal's default.
    public enum BasicColour: String, Sendable, CaseIterable {
        case black, red, green, yellow, blue, magenta, cyan, white, `default`
    }

    /// Attributes a colour setting may name instead of a colour.
    public enum TextAttribute: String, Sendable, CaseIterable {
        case bold, dim, underline, none
    }

    /// Parses a setting's value; nil when it names nothing known.
    public init?(name: String) {
        if let basic = BasicColour(rawValue: name) {
            self = .basic(basic)
        } else if let attribute = TextAttribute(rawValue: name) {
            self = .attribute(attribute)
        } else if name.hasPrefix("bright-"), let base = BasicColour(rawValue: String(name.dropFirst(7))),
            base != .default
        {
            self = .bright(base)
        } else if !name.isEmpty, name.allSatisfy({ $0.isASCII && $0.isNumber }), let index = UInt8(name) {
            self = .palette(index)
        } else {
            return nil
        }
    }
}

/// tokenpin's settings, from `tokenpin.conf` files (`key = value`, `#` comments).
public struct Configuration: Sendable, Equatable {
    /// Wrong PINs before the PIN locks.
    public var retriesMax: Int = 5
    /// Seconds to wait after the n-th consecutive failure (`fail-delay = 0,0,0,30,300`).
    public var failDelay: [Int] = []
    /// The Argon2id time target at enrolment, in milliseconds.
    public var kdfTargetMilliseconds: Int = 300
    /// Fixed Argon2id memory in MiB instead of calibrating (with `kdf-passes`).
    public var kdfMemoryMiB: Int?
    /// Fixed Argon2id passes instead of calibrating.
    public var kdfPasses: Int?
    /// The PIN rules.
    public var policy = PINPolicy()
    /// The site blocklist file, if any.
    public var blocklistFile: String?
    /// PIN or token, or both.
    public var mode: VerificationMode = .either
    /// Whether a failing token falls back to the PIN.
    public var fallback: FallbackPolicy = .allow
    /// The reader to use (a name or a glob); nil means any reader with the enrolled card.
    public var reader: String?
    /// Seconds pcscd, a reader and its card may take to answer one command (`card-timeout`); key generation on
    /// the card waits at least 120 s.
    public var cardTimeoutSeconds: Int = 10
    /// Whether card PINs are typed on a reader's own keypad where it has one (`pinpad`; `--no-pinpad` turns it off).
    public var pinpad: PinpadUse = .auto
    /// The one PKCS#11 module the PKCS#11 token application loads, by absolute path (`pkcs11-module`); nil: the
    /// modules p11-kit is configured to load. Only the `tokenpin-pkcs11` helper ever loads it.
    public var pkcs11Module: String?
    /// Colours and prompts.
    public var appearance = Appearance()
    /// tokenpind's own limits and rules (the `.daemon` keys but `login-keyring`, which the service reads too).
    public var daemon = DaemonSettings()
    /// Where `pin-blocklist` was set, so that a blocklist that cannot be read names that line.
    public var blocklistSetting: SettingSource?
    /// Whether `derive` releases keys at all (`derive`); each application may say otherwise.
    public var deriveEnabled = true
    /// tokenpind: keep the login password sealed and hand it to the PAM stack after a verification at the seat
    /// (`login-keyring`, docs/what-the-pin-opens.md). A daemon key, but not in `daemon`: the service reads it too,
    /// when a new record replaces the login-keyring file.
    public var loginKeyring = false
    /// The `app.NAME.*` rules, by application name (ApplicationPolicy.swift).
    public var applicationPolicies: [String: ApplicationPolicy] = [:]

    /// The site's own check of new PINs (`pin-check`), an absolute path; nil: none.
    public var pinCheckProgram: String?
    /// Where `pin-check` was set, so that a file others could change is refused.
    public var pinCheckSetting: SettingSource?
    /// Seconds the `pin-check` program may run before it is stopped (`pin-check-timeout`).
    public var pinCheckTimeoutSeconds: Int = PINCheckProgram.defaultTimeoutMilliseconds / 1000

    /// The `pin-check` program to run for each new PIN, or nil.
    public var pinCheck: PINCheckProgram? {
        pinCheckProgram.map { PINCheckProgram(path: $0, timeoutMilliseconds: pinCheckTimeoutSeconds * 1000) }
    }

    /// The defaults.
    public init() {}

    /// The files read in order: the system file, its drop-ins (sorted), the user's file.
    public static func standardFiles(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        systemDirectory: String = "/etc/tokenpin"
    ) -> [String] {
        var files = [systemDirectory + "/tokenpin.conf"]
        let dropIns = systemDirectory + "/conf.d"
        if let names = try? FileManager.default.contentsOfDirectory(atPath: dropIns) {
            files += names.filter { $0.hasSuffix(".conf") && !$0.hasPrefix(".") }.sorted().map { dropIns + "/" + $0 }
        }
        let configHome =
            environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (environment["HOME"] ?? Paths.homeDirectory()) + "/.config"
        files.append(configHome + "/tokenpin/tokenpin.conf")
        return files
    }

    /// Loads the standard files that exist, then `explicitFile` (which must exist).
    public static func load(files: [String], explicitFile: String?) throws(ConfigError) -> Configuration {
        var configuration = Configuration()
        for file in files where FileManager.default.fileExists(atPath: file) {
            try configuration.apply(file: file)
        }
        if let explicitFile {
            guard FileManager.default.fileExists(atPath: explicitFile) else {
                throw ConfigError(file: explicitFile, line: 0, message: "no such configuration file")
            }
            try configuration.apply(file: explicitFile)
        }
        try configuration.checkCombinations(
            files: files.filter { FileManager.default.fileExists(atPath: $0) } + [explicitFile].compactMap { $0 })
        try configuration.loadBlocklist()
        try configuration.checkPINCheckSetting()
        return configuration
    }

    /// Applies the settings in `file` over the current ones.
    public mutating func apply(file: String) throws(ConfigError) {
        try apply(text: try Self.text(of: file), file: file)
    }

    /// The text of `file`, or the error that says why it cannot be read.
    static func text(of file: String) throws(ConfigError) -> String {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw ConfigError(file: file, line: 0, message: "cannot read the file")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigError(file: file, line: 0, message: "the file is not UTF-8 text")
        }
        return text
    }

    /// One `key = value` line of a file, before its value is checked.
    public struct Entry: Sendable, Equatable {
        /// The key as written.
        public var key: String
        /// The value, without surrounding blanks or double quotes.
        public var value: String
        /// The 1-based line.
        public var line: Int
    }

    /// The `key = value` lines of `text` (LF or CRLF line endings, `#` comments), unchecked; a line without `=`
    /// is an error naming `file` and the line.
    public static func entries(text: String, file: String) throws(ConfigError) -> [Entry] {
        var entries: [Entry] = []
        for (index, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let lineNumber = index + 1
            var line = Substring(rawLine)
            if let hash = line.firstIndex(of: "#") { line = line[..<hash] }
            let trimmed = line.trimmingBlanks()
            if trimmed.isEmpty { continue }
            guard let equals = trimmed.firstIndex(of: "=") else {
                throw ConfigError(file: file, line: lineNumber, message: "expected `key = value`, found `\(trimmed)`")
            }
            let key = trimmed[..<equals].trimmingBlanks()
            var value = trimmed[trimmed.index(after: equals)...].trimmingBlanks()
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            entries.append(Entry(key: key, value: value, line: lineNumber))
        }
        return entries
    }

    /// The entries of `file`, or the error that says why it cannot be read.
    public static func entries(file: String) throws(ConfigError) -> [Entry] {
        try entries(text: try Self.text(of: file), file: file)
    }

    /// Applies `key = value` lines over the current settings.
    public mutating func apply(text: String, file: String) throws(ConfigError) {
        for entry in try Self.entries(text: text, file: file) {
            do {
                try set(key: entry.key, value: entry.value)
            } catch let message {
                throw ConfigError(file: file, line: entry.line, message: message.text)
            }
            if let source = Self.declaration(named: entry.key)?.source {
                self[keyPath: source] = SettingSource(file: file, line: entry.line)
            }
        }
        if policy.maxLength < policy.minLength {
            throw ConfigError(
                file: file, line: 0,
                message: "pin-max-length (\(policy.maxLength)) is below pin-min-length (\(policy.minLength))")
        }
    }

    struct Message: Error { var text: String }

    /// A `pkcs11-module` value: empty or `p11-kit` for p11-kit's modules, else the absolute path of a shared object
    /// (no search path: the helper `dlopen`s exactly this file), without control characters, at most 4096 bytes.
    static func pkcs11Module(_ value: String) throws(Message) -> String? {
        if value.isEmpty || value == "p11-kit" { return nil }
        guard value.hasPrefix("/") else {
            throw Message(
                text: "pkcs11-module must be the absolute path of a PKCS#11 module "
                    + "(/usr/lib/x86_64-linux-gnu/opensc-pkcs11.so) or p11-kit, not `\(value)`")
        }
        guard value.utf8.count <= 4096, !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else {
            throw Message(text: "pkcs11-module must be a path of at most 4096 bytes without control characters")
        }
        return value
    }

    /// The most entries `fail-delay` may list.
    public static let maximumFailDelayEntries = 100
    /// The largest `daemon-kdf-memory`, in MiB (1024G); times 1024 (KiB) it still fits any `Int`.
    public static let maximumDaemonKDFMemoryMiB = 1 << 20

    /// `mebibytes` in KiB, saturating: the files bound every size, a `Configuration` built in code might not.
    public static func kibibytes(mebibytes: Int) -> Int {
        let (product, overflow) = max(0, mebibytes).multipliedReportingOverflow(by: 1024)
        return overflow ? .max : product
    }

    /// Reads the site blocklist file (one PIN a line, `#` comments) into the policy.
    public mutating func loadBlocklist() throws(ConfigError) {
        guard let file = blocklistFile else { return }
        guard let data = FileManager.default.contents(atPath: file), let text = String(data: data, encoding: .utf8)
        else {
            // The error names the setting (file and line) an admin must fix, and the list it could not read.
            guard let setting = blocklistSetting else {
                throw ConfigError(file: file, line: 0, message: "cannot read the PIN blocklist")
            }
            throw ConfigError(
                file: setting.file, line: setting.line,
                message: "pin-blocklist: cannot read \(file) (missing, unreadable or not UTF-8 text)")
        }
        var entries = Set<[UInt32]>()
        for line in text.split(separator: "\n") {
            var entry = Substring(line)
            if let hash = entry.firstIndex(of: "#") { entry = entry[..<hash] }
            let trimmed = entry.trimmingBlanks()
            if !trimmed.isEmpty { entries.insert(trimmed.unicodeScalars.map(\.value)) }
        }
        policy.siteBlocklist = entries
    }
}

extension Configuration {
    /// Refuses a `pin-check` set in a file that someone other than its owner (root, or the user running
    /// tokenpin) could change: the program runs with this process's rights (root, in tokenpind) on every new PIN.
    public func checkPINCheckSetting() throws(ConfigError) {
        guard pinCheckProgram != nil, let setting = pinCheckSetting else { return }
        guard let info = try? FileStatus.of(setting.file) else {
            throw ConfigError(file: setting.file, line: setting.line, message: "pin-check: cannot inspect this file")
        }
        let owner = info.owner
        let mode = UInt16(truncatingIfNeeded: info.permissions)
        guard owner == 0 || owner == CurrentProcess.effectiveUserID, mode & 0o022 == 0 else {
            throw ConfigError(
                file: setting.file, line: setting.line,
                message: "pin-check is set in a file others can change (owner uid \(owner), mode "
                    + String(mode & 0o777, radix: 8) + "); it must belong to root (or the user running "
                    + "tokenpin) and not be writable by group or others")
        }
    }
}

/// `pinpad`: where a reader has a keypad (PC/SC part 10 secure PIN entry), the card PIN is typed there (`auto`) or
/// at the keyboard as on any reader (`off`).
public enum PinpadUse: String, Sendable, CaseIterable, Equatable {
    /// The reader's keypad, when it has one and the card's PIN format allows it.
    case auto
    /// The keyboard, always.
    case off
}
