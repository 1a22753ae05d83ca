import FoundationEssentials

/// What a PAM module answers (the `value` names of libpam's bracket syntax, `pam.conf(5)`).
package enum PAMResult: String, Sendable, CaseIterable {
    case success
    case openErr = "open_err"
    case symbolErr = "symbol_err"
    case serviceErr = "service_err"
    case systemErr = "system_err"
    case bufErr = "buf_err"
    case permDenied = "perm_denied"
    case authErr = "auth_err"
    case credInsufficient = "cred_insufficient"
    case authinfoUnavail = "authinfo_unavail"
    case userUnknown = "user_unknown"
    case maxtries
    case newAuthtokReqd = "new_authtok_reqd"
    case acctExpired = "acct_expired"
    case sessionErr = "session_err"
    case credUnavail = "cred_unavail"
    case credExpired = "cred_expired"
    case credErr = "cred_err"
    case noModuleData = "no_module_data"
    case convErr = "conv_err"
    case authtokErr = "authtok_err"
    case authtokRecoverErr = "authtok_recover_err"
    case authtokLockBusy = "authtok_lock_busy"
    case authtokDisableAging = "authtok_disable_aging"
    case tryAgain = "try_again"
    case ignore, abort
    case authtokExpired = "authtok_expired"
    case moduleUnknown = "module_unknown"
    case badItem = "bad_item"
    case convAgain = "conv_again"
    case incomplete
}

/// What libpam does with an answer: `pam.conf(5)`'s actions, a jump over the next N lines included.
package enum PAMAction: Sendable, Equatable {
    case ignore, ok, done, bad, die, reset
    case jump(Int)

    init?(_ word: String) {
        switch word {
        case "ignore": self = .ignore
        case "ok": self = .ok
        case "done": self = .done
        case "bad": self = .bad
        case "die": self = .die
        case "reset": self = .reset
        default:
            guard let count = Int(word), count > 0, word.allSatisfy(\.isASCII) else { return nil }
            self = .jump(count)
        }
    }
}

/// A service's `auth` stack as libpam reads it from `/etc/pam.d`: `@include`, `include` and `substack` resolved,
/// keywords turned into their bracket form, a control libpam would not understand kept as the failing line libpam
/// makes of it. `run` plays it against what each module answers, as `_pam_dispatch` does.
package struct PAMStack: Sendable, Equatable {
    /// One `auth` line.
    package struct Line: Sendable, Equatable {
        /// The file and line it comes from.
        package var file: String
        package var number: Int
        /// The module's file name (`pam_unix.so`), without its directory.
        package var module: String
        /// The module's arguments (a bracketed one without its brackets).
        package var arguments: [String]
        /// The action for each answer named; the rest take `defaultAction`.
        package var actions: [PAMResult: PAMAction]
        package var defaultAction: PAMAction
        /// What libpam would complain of (an unknown action such as pam-auth-update's `end`): the line then
        /// fails whatever the module answers.
        package var problem: String?
        /// A `substack` line's own stack, whose result is the line's answer.
        package var substack: PAMStack?

        /// The action for `result`.
        package func action(for result: PAMResult) -> PAMAction { actions[result] ?? defaultAction }

        /// `FILE:LINE`.
        package var source: String { "\(file):\(number)" }
    }

    /// The `auth` lines in the order libpam runs them.
    package var lines: [Line]

    /// Whether a line loads `module` (`pam_tokenpin.so`), here or in a substack.
    package func loads(_ module: String) -> Bool {
        lines.contains { $0.module == module || ($0.substack?.loads(module) ?? false) }
    }

    /// Every line with a problem, here and in substacks.
    package var problems: [Line] { lines.flatMap { [$0].filter { $0.problem != nil } + ($0.substack?.problems ?? []) } }

    // MARK: Reading

    /// Reads service `name` from `directory` (`/etc/pam.d`); `read` gives a file's text or nil. Includes nest at most
    /// 16 deep (libpam stops there too); a missing include adds nothing, as libpam goes on without it.
    package static func read(service name: String, directory: String, read: (String) -> String?) -> PAMStack {
        PAMStack(lines: lines(of: name, directory: directory, read: read, depth: 0))
    }

    static func lines(of name: String, directory: String, read: (String) -> String?, depth: Int) -> [Line] {
        let path = name.hasPrefix("/") ? name : directory + "/" + name
        guard depth < 16, let text = read(path) else { return [] }
        var result: [Line] = []
        var pending = ""
        var pendingNumber = 0
        for (index, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            var line = String(raw)
            if pending.isEmpty { pendingNumber = index + 1 }
            if let hash = line.firstIndex(of: "#") { line = String(line[..<hash]) }
            if line.hasSuffix("\\") {
                pending += line.dropLast() + " "
                continue
            }
            line = pending + line
            pending = ""
            let words = tokens(line)
            guard let first = words.first else { continue }
            if first == "@include", words.count >= 2 {
                result += lines(of: words[1], directory: directory, read: read, depth: depth + 1)
                continue
            }
            let type = first.hasPrefix("-") ? String(first.dropFirst()) : first
            guard type == "auth", words.count >= 3 else { continue }
            let control = words[1]
            if control == "include" {
                result += lines(of: words[2], directory: directory, read: read, depth: depth + 1)
                continue
            }
            var entry = Line(
                file: path, number: pendingNumber, module: String(words[2].split(separator: "/").last ?? ""),
                arguments: words.dropFirst(3).map {
                    $0.hasPrefix("[") && $0.hasSuffix("]") ? String($0.dropFirst().dropLast()) : $0
                },
                actions: [:], defaultAction: .bad)
            if control == "substack" {
                entry.substack = PAMStack(
                    lines: lines(of: words[2], directory: directory, read: read, depth: depth + 1))
                entry.actions = [.success: .ok, .newAuthtokReqd: .ok, .ignore: .ignore]
                entry.defaultAction = .bad
            } else {
                entry.parseControl(control)
            }
            result.append(entry)
        }
        return result
    }

    /// The words of a line; a `[…]` word may hold blanks (a bracketed control or argument).
    static func tokens(_ line: String) -> [String] {
        var words: [String] = []
        var current = ""
        var depth = 0
        for character in line {
            if character == "[" { depth += 1 }
            if character == "]" { depth = max(0, depth - 1) }
            if (character == " " || character == "\t") && depth == 0 {
                if !current.isEmpty { words.append(current) }
                current = ""
            } else {
                current.append(character)
            }
        }
        if !current.isEmpty { words.append(current) }
        return words
    }

    // MARK: Running

    /// The stack's answer when each line's module answers `answer(line)`: libpam's `_pam_dispatch_aux`, keeping
    /// its "impression" (nothing yet, positive, negative) and status.
    package func run(_ answer: (Line) -> PAMResult) -> PAMResult {
        var impression = 0  // 0 undecided, 1 positive, -1 negative
        var status = PAMResult.authErr  // PAM_MUST_FAIL_CODE
        // libpam's last check: a success without a positive impression is a failure (a stack of ignores).
        func decision() -> PAMResult { status == .success && impression != 1 ? .authErr : status }
        var index = 0
        while index < lines.count {
            let line = lines[index]
            let result = line.substack.map { $0.run(answer) } ?? answer(line)
            let action = line.problem == nil ? line.action(for: result) : .bad
            switch action {
            case .reset:
                impression = 0
                status = .authErr
            case .ok, .done:
                if impression == 0 || (impression == 1 && status == .success), result != .ignore {
                    impression = 1
                    status = result
                }
                if impression != -1, action == .done { return decision() }
            case .bad, .die:
                if impression != -1 {
                    impression = -1
                    status = result == .success ? .permDenied : result
                }
                if action == .die { return decision() }
            case .ignore:
                break
            case .jump(let count):
                index += count
            }
            index += 1
        }
        return decision()
    }
}

extension PAMStack.Line {
    /// Turns a control (a keyword or `[value=action ...]`) into actions, as libpam's `_pam_parse_control` does: an
    /// unknown value or action makes libpam treat every answer as `bad`.
    mutating func parseControl(_ control: String) {
        switch control {
        case "required":
            actions = [.success: .ok, .newAuthtokReqd: .ok, .ignore: .ignore]
            defaultAction = .bad
        case "requisite":
            actions = [.success: .ok, .newAuthtokReqd: .ok, .ignore: .ignore]
            defaultAction = .die
        case "sufficient":
            actions = [.success: .done, .newAuthtokReqd: .done]
            defaultAction = .ignore
        case "optional":
            actions = [.success: .ok, .newAuthtokReqd: .ok]
            defaultAction = .ignore
        default:
            guard control.hasPrefix("["), control.hasSuffix("]") else {
                problem = "`\(control)` is not a PAM control"
                defaultAction = .bad
                return
            }
            for pair in control.dropFirst().dropLast().split(whereSeparator: { $0 == " " || $0 == "\t" }) {
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, let action = PAMAction(parts[1]) else {
                    let word = parts.count == 2 ? parts[1] : String(pair)
                    problem =
                        word == "end"
                        ? "`end` is pam-auth-update's syntax (its profiles), not libpam's: libpam reads this line as "
                            + "failing whatever the module answers, so the stack refuses everyone here"
                        : "`\(pair)` is not a value=action libpam knows: it reads this line as failing always"
                    actions = [:]
                    defaultAction = .bad
                    return
                }
                if parts[0] == "default" {
                    defaultAction = action
                } else if let result = PAMResult(rawValue: parts[0]) {
                    actions[result] = action
                } else {
                    problem = "`\(parts[0])` is not a PAM return value: libpam reads this line as failing always"
                    actions = [:]
                    defaultAction = .bad
                    return
                }
            }
        }
    }
}
