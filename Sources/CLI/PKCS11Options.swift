import TokenpinArguments
import TokenpinService

/// `--token-uri` and `--pkcs11-module`, checked once the command and where it runs are known.
struct PKCS11Options {
    /// The key's RFC 7512 URI.
    var tokenURI: String?
    /// The one module to load, by absolute path.
    var module: String?

    init(_ values: ParsedArguments) {
        tokenURI = values.value(Options.tokenURI)
        module = values.value(Options.pkcs11Module)
    }

    /// Why these options cannot be used as given, or nil: a URI that is not `pkcs11:`, another `--app`, a module
    /// that is not an absolute path, or a module named to tokenpind (it loads only what its own `pkcs11-module`
    /// names: a client's module would be code run as root).
    func problem(application: String?, local: Bool) -> String? {
        if tokenURI == nil && module == nil { return nil }
        if let application, application != TokenApplicationKind.pkcs11.rawValue {
            return "--token-uri and --pkcs11-module name a PKCS#11 key: they apply with --app pkcs11"
        }
        if let uri = tokenURI {
            guard uri.hasPrefix("pkcs11:"), uri.utf8.count <= 1024,
                !uri.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7F })
            else {
                return "--token-uri takes an RFC 7512 URI of at most 1024 bytes (pkcs11:token=…;id=%01), not `\(uri)`"
            }
        }
        if let module {
            guard module.hasPrefix("/") else {
                return "--pkcs11-module takes the absolute path of a PKCS#11 module, not `\(module)`"
            }
            guard local else {
                return "tokenpind loads only the PKCS#11 module its own `pkcs11-module` setting names; "
                    + "--pkcs11-module applies with --local"
            }
        }
        return nil
    }
}
