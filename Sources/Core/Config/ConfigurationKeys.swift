/// One key of `tokenpin.conf`, declared once: its name, the values it takes, the setting it changes, a line of
/// documentation and who reads it. Parsing, `Configuration.keys`, the unknown-key suggestions, the error messages
/// and the man page's key table (tokenpin.conf(5), checked by ConfigDocsTests) all follow from `Configuration.declarations`.
public struct ConfigurationKey: Sendable {
    /// Who reads a key.
    public enum Audience: String, Sendable, CaseIterable {
        /// The PIN policy, the record, the key derivation and the card: the CLI in local mode, and tokenpind for
        /// the records it keeps (never from a user's files).
        case policy
        /// The CLI's own appearance (colours, prompts) and the reader it asks for: the only keys a client's files
        /// may set when it goes through tokenpind.
        case client
        /// tokenpind alone: its limits and its rules for who may do what, from the system files only.
        case daemon
    }

    /// The key as written in the files.
    public let name: String
    /// Who reads it.
    public let audience: Audience
    /// The values it takes, in words (`1-100`, `digits, alnum, any`).
    public let values: String
    /// One line of documentation.
    public let summary: String
    /// The key's setting in `configuration`, as a file would write it (`unset` when it has none).
    public let display: @Sendable (_ configuration: Configuration) -> String
    /// Where the configuration remembers the file and line that set this key, if it does.
    let source: Configuration.Setting<SettingSource?>?
    /// Checks `value` and sets it; the error's text is the message the file's line gets.
    let parse: @Sendable (_ configuration: inout Configuration, _ value: String) throws(Configuration.Message) -> Void

    /// The value the defaults give, as a file would write it.
    public var defaultValue: String { display(Configuration()) }
}

extension Configuration {
    /// The setting a key changes: a key path into the configuration.
    public typealias Setting<Value> = any WritableKeyPath<Configuration, Value> & Sendable
}

// Each helper takes its setting's key path as an autoclosure: a key path literal is made at run time (about 20,000
// instructions each), and taken eagerly the 47 declarations cost a million instructions at every start, where a
// file sets two or three keys. The closures make a key's path only when that key is read or shown.
extension ConfigurationKey {
    /// A whole number within `range`.
    static func integer(
        _ name: String, _ range: ClosedRange<Int>,
        _ path: @autoclosure @escaping @Sendable () -> Configuration.Setting<Int>,
        _ audience: Audience, _ summary: String
    ) -> ConfigurationKey {
        ConfigurationKey(
            name: name, audience: audience, values: "\(range.lowerBound)-\(range.upperBound)", summary: summary,
            display: { "\($0[keyPath: path()])" }, source: nil,
            parse: { (configuration: inout Configuration, value: String) throws(Configuration.Message) in
                configuration[keyPath: path()] = try Configuration.wholeNumber(name, value, range)
            })
    }

    /// A whole number within `range`, or nothing (`unset` says what nothing means).
    static func integer(
        _ name: String, _ range: ClosedRange<Int>,
        _ path: @autoclosure @escaping @Sendable () -> Configuration.Setting<Int?>,
        unset: String, _ audience: Audience, _ summary: String
    ) -> ConfigurationKey {
        ConfigurationKey(
            name: name, audience: audience, values: "\(range.lowerBound)-\(range.upperBound)", summary: summary,
            display: { $0[keyPath: path()].map { "\($0)" } ?? unset }, source: nil,
            parse: { (configuration: inout Configuration, value: String) throws(Configuration.Message) in
                configuration[keyPath: path()] = try Configuration.wholeNumber(name, value, range)
            })
    }

    /// One of `T`'s cases, by its raw value.
    static func choice<T: RawRepresentable & CaseIterable & Sendable>(
        _ name: String, _ path: @autoclosure @escaping @Sendable () -> Configuration.Setting<T>, _ audience: Audience,
        _ summary: String
    ) -> ConfigurationKey where T.RawValue == String {
        let names = T.allCases.map(\.rawValue).joined(separator: ", ")
        return ConfigurationKey(
            name: name, audience: audience, values: names, summary: summary,
            display: { $0[keyPath: path()].rawValue }, source: nil,
            parse: { (configuration: inout Configuration, value: String) throws(Configuration.Message) in
                guard let result = T(rawValue: value) else {
                    throw Configuration.Message(text: "\(name) must be one of \(names), not `\(value)`")
                }
                configuration[keyPath: path()] = result
            })
    }

    /// `on` or `off`; `synonyms` also takes `yes`/`true` and `no`/`false`.
    static func onOff(
        _ name: String, _ path: @autoclosure @escaping @Sendable () -> Configuration.Setting<Bool>, synonyms: Bool,
        _ audience: Audience, _ summary: String
    ) -> ConfigurationKey {
        ConfigurationKey(
            name: name, audience: audience, values: "on, off", summary: summary,
            display: { $0[keyPath: path()] ? "on" : "off" }, source: nil,
            parse: { (configuration: inout Configuration, value: String) throws(Configuration.Message) in
                if value == "on" || (synonyms && (value == "yes" || value == "true")) {
                    configuration[keyPath: path()] = true
                } else if value == "off" || (synonyms && (value == "no" || value == "false")) {
                    configuration[keyPath: path()] = false
                } else {
                    throw Configuration.Message(text: "\(name) must be on or off, not `\(value)`")
                }
            })
    }

    /// A colour name (`red`, `bright-blue`, `bold`) or a palette entry (`0`-`255`).
    static func colour(
        _ name: String, _ path: @autoclosure @escaping @Sendable () -> Configuration.Setting<String>, _ summary: String
    ) -> ConfigurationKey {
        ConfigurationKey(
            name: name, audience: .client, values: "a colour: red, bright-blue, bold, 0-255", summary: summary,
            display: { $0[keyPath: path()] }, source: nil,
            parse: { (configuration: inout Configuration, value: String) throws(Configuration.Message) in
                guard TextColour(name: value) != nil else {
                    throw Configuration.Message(
                        text: "\(name): unknown colour `\(value)` (use a name such as red, bright-blue, bold, or 0-255)"
                    )
                }
                configuration[keyPath: path()] = value
            })
    }

    /// A prompt: a non-empty line of at most 200 characters.
    static func prompt(
        _ name: String, _ path: @autoclosure @escaping @Sendable () -> Configuration.Setting<String>, _ summary: String
    ) -> ConfigurationKey {
        ConfigurationKey(
            name: name, audience: .client, values: "a line of text", summary: summary,
            display: { $0[keyPath: path()] }, source: nil,
            parse: { (configuration: inout Configuration, value: String) throws(Configuration.Message) in
                guard !value.isEmpty, value.count <= 200, !value.unicodeScalars.contains(where: { $0.value < 0x20 })
                else {
                    throw Configuration.Message(text: "\(name) must be a non-empty line of text")
                }
                configuration[keyPath: path()] = value
            })
    }
}

extension Configuration {
    /// Every key the files may set, each declared once (the `app.NAME.*` lines are ApplicationPolicy.swift's).
    public static let declarations: [ConfigurationKey] = [
        .integer(
            "retries-max", 1...RetryCounter.maximumTries, \.retriesMax, .policy, "Wrong PINs before the PIN locks."),
        ConfigurationKey(
            name: "fail-delay", audience: .policy,
            values:
                "seconds 0-\(RetryCounter.maximumDelaySeconds), comma-separated, at most \(maximumFailDelayEntries)",
            summary: "Seconds to wait after the n-th consecutive failure (0,0,0,30,300); the last entry holds.",
            display: { $0.failDelay.isEmpty ? "none" : $0.failDelay.map(String.init).joined(separator: ",") },
            source: nil,
            parse: { (c: inout Configuration, value: String) throws(Message) in c.failDelay = try failDelay(value) }),
        .integer(
            "kdf-target-ms", 50...10000, \.kdfTargetMilliseconds, .policy,
            "Milliseconds one Argon2id derivation should take; calibrated at enrol, change and reset."),
        .integer(
            "kdf-memory-mib", 8...KDFParameters.maximumMemoryKiB / 1024, \.kdfMemoryMiB, unset: "calibrated", .policy,
            "Fixed Argon2id memory in MiB instead of calibrating."),
        .integer(
            "kdf-passes", 1...KDFParameters.maximumPasses, \.kdfPasses, unset: "calibrated", .policy,
            "Fixed Argon2id passes (with kdf-memory-mib), or the least passes when calibrating."),
        .integer("pin-min-length", 4...128, \.policy.minLength, .policy, "Fewest characters of a PIN."),
        .integer("pin-max-length", 4...256, \.policy.maxLength, .policy, "Most characters of a PIN."),
        .choice("pin-charset", \.policy.charset, .policy, "The characters a PIN may have (any: printable Unicode)."),
        .integer("pin-min-unique", 1...128, \.policy.minUnique, .policy, "Fewest distinct characters of a PIN."),
        ConfigurationKey(
            name: "pin-blocklist", audience: .policy, values: "a path", summary: "A file of refused PINs, one a line.",
            display: { $0.blocklistFile ?? "none" }, source: blocklistSource,
            parse: { (c: inout Configuration, value: String) throws(Message) in
                c.blocklistFile = value.isEmpty ? nil : value
            }),
        .onOff(
            "pin-blocklist-rules", \.policy.useBlocklist, synonyms: true, .policy,
            "The built-in blocklist: repeats, sequences, keypad lines, dates, common PINs."),
        ConfigurationKey(
            name: "pin-check", audience: .policy, values: "an absolute path",
            summary: "A program that checks each new PIN after the built-in policy.",
            display: { $0.pinCheckProgram ?? "none" }, source: pinCheckSource,
            parse: { (c: inout Configuration, value: String) throws(Message) in
                // No search path and no shell: the program is named by its full path (its file is checked when it
                // runs).
                guard value.isEmpty || value.hasPrefix("/") else {
                    throw Message(
                        text:
                            "pin-check must be the absolute path of a program (/usr/local/sbin/pin-check), not `\(value)`"
                    )
                }
                c.pinCheckProgram = value.isEmpty ? nil : value
            }),
        .integer(
            "pin-check-timeout", 1...60, \.pinCheckTimeoutSeconds, .policy,
            "Seconds the pin-check program may run before it is stopped."),
        .choice("mode", \.mode, .policy, "PIN or token (either), or PIN and token together (both)."),
        .choice("fallback", \.fallback, .policy, "Whether a missing or failing token falls back to the PIN."),
        ConfigurationKey(
            name: "reader", audience: .client, values: "a name or a glob",
            summary: "The reader to use; empty: any reader holding the enrolled card.", display: { $0.reader ?? "any" },
            source: nil,
            parse: { (c: inout Configuration, value: String) throws(Message) in c.reader = value.isEmpty ? nil : value }
        ),
        .integer(
            "card-timeout", 1...600, \.cardTimeoutSeconds, .policy,
            "Seconds pcscd, a reader and its card may take to answer one command."),
        .choice("pinpad", \.pinpad, .policy, "Card PINs on a reader's own keypad where it has one (auto), or never."),
        ConfigurationKey(
            name: "pkcs11-module", audience: .policy, values: "an absolute path, or p11-kit",
            summary: "The one PKCS#11 module --app pkcs11 loads.", display: { $0.pkcs11Module ?? "p11-kit" },
            source: nil,
            parse: { (c: inout Configuration, value: String) throws(Message) in c.pkcs11Module = try pkcs11Module(value)
            }),
        .choice("color", \.appearance.color, .client, "Colour output: auto (a terminal and NO_COLOR unset), or not."),
        .colour("color-prompt", \.appearance.promptColor, "The colour of prompts."),
        .colour("color-dots", \.appearance.dotsColor, "The colour of the dots shown while typing."),
        .colour("color-error", \.appearance.errorColor, "The colour of errors and wrong-PIN messages."),
        .colour("color-warning", \.appearance.warningColor, "The colour of warnings: last try, token fallback."),
        .colour("color-success", \.appearance.successColor, "The colour of success messages."),
        ConfigurationKey(
            name: "dot", audience: .client, values: "one character",
            summary: "The character shown per typed character.",
            display: { $0.appearance.dot }, source: nil,
            parse: { (c: inout Configuration, value: String) throws(Message) in
                guard value.count == 1 else { throw Message(text: "dot must be a single character, not `\(value)`") }
                c.appearance.dot = value
            }),
        .prompt("prompt-pin", \.appearance.promptPIN, "The PIN prompt (%u: the user; the tries left follow)."),
        .prompt("prompt-new-pin", \.appearance.promptNewPIN, "The new PIN prompt (%u: the user)."),
        .prompt("prompt-confirm-pin", \.appearance.promptConfirmPIN, "The prompt for the new PIN again."),
        .prompt(
            "prompt-current-pin", \.appearance.promptCurrentPIN,
            "The current PIN prompt (%u: the user; the tries left follow)."),
        .prompt("prompt-recovery-key", \.appearance.promptRecoveryKey, "The recovery key prompt (%u: the user)."),
        .prompt(
            "prompt-card-pin", \.appearance.promptCardPIN, "The card PIN prompt (%s: the card and its tries left)."),
        ConfigurationKey(
            name: "daemon-kdf-memory", audience: .daemon, values: "8M to 1024G (M, MiB, G, GiB; MiB without a unit)",
            summary: "The memory all Argon2id work may use at once; requests beyond it queue.",
            display: {
                $0.daemon.kdfMemoryMiB % 1024 == 0 ? "\($0.daemon.kdfMemoryMiB / 1024)G" : "\($0.daemon.kdfMemoryMiB)M"
            },
            source: nil,
            parse: { (c: inout Configuration, value: String) throws(Message) in
                c.daemon.kdfMemoryMiB = try daemonKDFMemory(value)
            }),
        .integer(
            "daemon-idle-timeout", 1...3600, \.daemon.idleTimeoutSeconds, .daemon,
            "Seconds a connection may stay silent between requests."),
        .integer(
            "daemon-prompt-timeout", 5...3600, \.daemon.promptTimeoutSeconds, .daemon,
            "Seconds a client may take to answer a prompt; then nothing is counted."),
        .integer(
            "daemon-rate-limit", 1...100_000, \.daemon.requestsPerMinute, .daemon,
            "Requests per connection per minute."),
        .choice(
            "on-card-removal", \.daemon.onCardRemoval, .daemon,
            "lock: lock a user's sessions when the card they verified with leaves its reader."),
        .integer(
            "lock-grace", 0...3600, \.daemon.lockGraceSeconds, .daemon,
            "Seconds to wait before acting on a removal; the card back in time cancels it."),
        .integer(
            "daemon-wait-timeout", 1...600, \.daemon.waitTimeoutSeconds, .daemon,
            "Seconds an operation waits for its user's lock or for memory before it answers busy."),
        .choice(
            "enrol-auth", \.daemon.enrolAuth, .daemon,
            "What a user proves before enrol or import creates a first way in: the login password, or nothing."),
        ConfigurationKey(
            name: "enrol-pam-service", audience: .daemon, values: "a file in /etc/pam.d",
            summary: "The PAM service that checks the login password for enrol-auth = password.",
            display: { $0.daemon.enrolPAMService }, source: nil,
            parse: { (c: inout Configuration, value: String) throws(Message) in
                guard RecordStore.validate(user: value) else {
                    throw Message(
                        text:
                            "enrol-pam-service must name a file in /etc/pam.d (letters, digits, - _ .), not `\(value)`")
                }
                c.daemon.enrolPAMService = value
            }),
        .choice(
            "pam-remote", \.daemon.pamRemote, .daemon,
            "A remote login through PAM: nothing is asked (ignore), or the PIN only (pin)."),
        .choice(
            "pam-other-user", \.daemon.pamOtherUser, .daemon,
            "Another user's PAM stack (su): the PIN only (pin), or refused (deny)."),
        .choice("card-bind", \.daemon.cardBind, .daemon, "Who may bind a card no other record binds."),
        .integer(
            "daemon-pam-prompt-timeout", 5...3600, \.daemon.pamPromptTimeoutSeconds, .daemon,
            "Seconds a PAM stack may take to answer a prompt."),
        .onOff(
            "derive", \.deriveEnabled, synonyms: true, .policy,
            "Whether derive releases application keys at all; app.APP.derive may say otherwise."),
        .onOff(
            "login-keyring", \.loginKeyring, synonyms: false, .daemon,
            "Keep the login password sealed and hand it to the PAM stack after a login at the seat."),
    ]

    /// Where `pin-blocklist` and `pin-check` remember the line that set them.
    static let blocklistSource: Configuration.Setting<SettingSource?> = \.blocklistSetting
    static let pinCheckSource: Configuration.Setting<SettingSource?> = \.pinCheckSetting

    /// The declaration of the key `name`, searched in order: a file sets a few keys, and a dictionary of all 47 cost
    /// about 230,000 instructions to build at every start.
    static func declaration(named name: String) -> ConfigurationKey? { declarations.first { $0.name == name } }

    /// Every key the files may set.
    public static let keys = declarations.map(\.name)

    /// The keys that only the CLI itself uses (colours, prompts, the reader it asks for): everything else applies
    /// to the record and its store, which tokenpind keeps under its own settings.
    public static let clientKeys = Set(declarations.filter { $0.audience == .client }.map(\.name))

    /// A whole number within `range`, or the message that names `key`.
    static func wholeNumber(_ key: String, _ value: String, _ range: ClosedRange<Int>) throws(Message) -> Int {
        guard let number = Int(value), range.contains(number) else {
            throw Message(
                text: "\(key) must be a whole number from \(range.lowerBound) to \(range.upperBound), not `\(value)`")
        }
        return number
    }

    /// A `fail-delay` value: seconds separated by commas.
    static func failDelay(_ value: String) throws(Message) -> [Int] {
        var delays: [Int] = []
        let parts = value.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count <= maximumFailDelayEntries else {
            throw Message(text: "fail-delay has more than \(maximumFailDelayEntries) entries")
        }
        for part in parts {
            guard let seconds = Int(part.trimmingBlanks()), (0...RetryCounter.maximumDelaySeconds).contains(seconds)
            else {
                throw Message(
                    text:
                        "fail-delay must be seconds from 0 to \(RetryCounter.maximumDelaySeconds) separated by commas (0,0,0,30,300), not `\(value)`"
                )
            }
            delays.append(seconds)
        }
        return delays
    }

    /// A `daemon-kdf-memory` value in MiB: MiB, or with a unit (512M, 512MiB, 1G, 1GiB).
    static func daemonKDFMemory(_ value: String) throws(Message) -> Int {
        var number = value
        var scale = 1
        for (suffix, factor) in [("GiB", 1024), ("MiB", 1), ("G", 1024), ("M", 1)] where number.hasSuffix(suffix) {
            number = String(number.dropLast(suffix.count)).trimmingBlanks()
            scale = factor
            break
        }
        // The amount is bounded before it is scaled, so no value overflows.
        guard let amount = Int(number), amount > 0, amount <= maximumDaemonKDFMemoryMiB / scale, amount * scale >= 8
        else {
            throw Message(text: "daemon-kdf-memory must be a size from 8M to 1024G (512M, 1G), not `\(value)`")
        }
        return amount * scale
    }

    /// Sets one key; an `app.NAME.*` key goes to the application rules.
    mutating func set(key: String, value: String) throws(Message) {
        if let declaration = Self.declaration(named: key) {
            try declaration.parse(&self, value)
        } else if try !setApplicationKey(key, value: value) {
            throw Message(text: "unknown key `\(key)`")
        }
    }
}
