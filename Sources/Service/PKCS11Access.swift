package import TokenpinCore
import TokenpinPKCS11

/// Where the PKCS#11 token application finds its tokens, and how it runs the helper they are reached through.
package struct PKCS11Access: Sendable, Equatable {
    /// One module by its absolute path (`pkcs11-module`, `--pkcs11-module`); nil: the modules p11-kit loads.
    package var module: String?
    /// The helper's path; nil: next to the executable, then `../libexec/tokenpin/` (`PKCS11Helper`).
    package var helper: String?
    /// The helper's whole environment (`NAME=value`); nil: this process's (modules read `SOFTHSM2_CONF` from it).
    package var environment: [String]?
    /// How long each helper request may take, in milliseconds (the service sets `card-timeout`'s).
    package var timeoutMilliseconds = PKCS11Helper.defaultTimeoutMilliseconds
    /// Where the helpers' PKCS#11 calls and start costs are counted (`tokenpin bench --token`); nil: nowhere.
    package var counter: PKCS11CallCounter?

    /// Everything by default: p11-kit's modules, the installed helper.
    package init(module: String? = nil, helper: String? = nil, environment: [String]? = nil) {
        self.module = module
        self.helper = helper
        self.environment = environment
    }

    /// The modules to load.
    package var source: PKCS11ModuleSource { module.map { .path($0) } ?? .p11kit }

    /// The same access: the same modules, helper, environment and timeout, counted in the same place.
    package static func == (lhs: PKCS11Access, rhs: PKCS11Access) -> Bool {
        lhs.module == rhs.module && lhs.helper == rhs.helper && lhs.environment == rhs.environment
            && lhs.timeoutMilliseconds == rhs.timeoutMilliseconds && lhs.counter === rhs.counter
    }
}

extension PKCS11Access {
    /// The modules and helper the configuration names (`pkcs11-module`), each request bounded by `card-timeout`:
    /// what the service uses, for the daemon's token watch.
    package init(configuration: Configuration) {
        self.init(module: configuration.pkcs11Module)
        timeoutMilliseconds = configuration.cardTimeoutSeconds * 1000
    }

    /// The URI of the bound PKCS#11 key when its token is present and still holds that key (the binding's public
    /// key hash), else nil: the daemon's answer to "is the card a user verified with back?" (no login, no PIN).
    package func reader(holding binding: TokenBinding) -> String? {
        guard let uri = binding.uri,
            let key = try? PKCS11TokenKey.open(
                module: source, uri: uri, timeout: timeoutMilliseconds, executable: helper, environment: environment)
        else { return nil }
        defer { key.close() }
        return key.identity == binding.serial ? uri : nil
    }
}
