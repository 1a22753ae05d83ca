/// What a site allows `derive` for one application, or for all (`tokenpin.conf`):
///
///     derive = on | off                      # every application (default on)
///     app.NAME.derive = on | off             # this one
///     app.NAME.method = any | token | both   # what the verification must use (default any)
///     app.NAME.callers = any | root          # who may ask (root: PAM and root's tools)
///
/// NAME is an application name (`ApplicationName`); the setting is the last dot-separated part, so names with
/// dots (`backup.home`) work. Stricter settings are the site's: through tokenpind only the daemon's own
/// configuration counts; in local mode the user's own files apply too, so there it is a convenience, not a rule.
public struct ApplicationPolicy: Sendable, Equatable {
    /// What the verification before the release must use.
    public enum Method: String, Sendable, CaseIterable {
        /// What `verify` would use: the token first, with fallback to the PIN.
        case any
        /// The card: a token verification (or the PIN and the card together).
        case token
        /// The PIN and the card together (`mode = both`).
        case both
    }

    /// Who may ask for the key.
    public enum Callers: String, Sendable, CaseIterable {
        /// Any user, for their own record.
        case any
        /// Root only: the PAM module (which runs as root in login, a greeter, su) and root's tools.
        case root
    }

    /// Whether the key is released at all.
    public var enabled: Bool?
    /// What the verification must use.
    public var method: Method = .any
    /// Who may ask.
    public var callers: Callers = .any

    /// No rule of its own: the global `derive` decides.
    public init() {}

    /// The most applications a configuration may name.
    public static let maximumApplications = 256
}

extension Configuration {
    /// The rules for `application`: its own `app.NAME.*` lines over the global `derive`.
    public func derivePolicy(for application: ApplicationName) -> (enabled: Bool, policy: ApplicationPolicy) {
        let policy = applicationPolicies[application.rawValue] ?? ApplicationPolicy()
        return (policy.enabled ?? deriveEnabled, policy)
    }

    /// Sets an `app.NAME.SETTING` line; false when `key` is none.
    mutating func setApplicationKey(_ key: String, value: String) throws(Message) -> Bool {
        func onOff() throws(Message) -> Bool {
            switch value {
            case "on", "yes", "true": return true
            case "off", "no", "false": return false
            default: throw Message(text: "\(key) must be on or off, not `\(value)`")
            }
        }
        guard key.hasPrefix("app."), let dot = key.lastIndex(of: "."), dot > key.index(key.startIndex, offsetBy: 3)
        else { return false }
        let name = String(key[key.index(key.startIndex, offsetBy: 4)..<dot])
        let setting = String(key[key.index(after: dot)...])
        guard ApplicationName(name) != nil else {
            throw Message(text: "`\(key)`: `\(name)` is not an application name (\(ApplicationName.shape))")
        }
        var policy = applicationPolicies[name] ?? ApplicationPolicy()
        switch setting {
        case "derive": policy.enabled = try onOff()
        case "method":
            guard let method = ApplicationPolicy.Method(rawValue: value) else {
                throw Message(text: "\(key) must be one of any, token, both, not `\(value)`")
            }
            policy.method = method
        case "callers":
            guard let callers = ApplicationPolicy.Callers(rawValue: value) else {
                throw Message(text: "\(key) must be one of any, root, not `\(value)`")
            }
            policy.callers = callers
        default:
            throw Message(text: "unknown key `\(key)` (an application takes derive, method and callers)")
        }
        if applicationPolicies[name] == nil, applicationPolicies.count >= ApplicationPolicy.maximumApplications {
            throw Message(text: "more than \(ApplicationPolicy.maximumApplications) applications are configured")
        }
        applicationPolicies[name] = policy
        return true
    }
}
