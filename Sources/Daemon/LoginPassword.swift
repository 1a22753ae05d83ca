internal import CTokenpinPAM
import FoundationEssentials
import TokenpinCore
import TokenpinService

/// The login-password check tokenpind runs before it creates a first way in for a user (`enrol`, `import`).
///
/// Without it, any code running as a user could enrol a PIN of its choosing and then pass every PAM stack that
/// holds pam_tokenpin (`sudo`) without knowing the password. The check goes through a PAM service of its own
/// (`enrol-pam-service`, default `tokenpin-enrol`), which must be a self-contained file in `/etc/pam.d`:
/// no `include`, `substack` or `@include` (which could pull in a stack holding pam_tokenpin, letting a PIN vouch
/// for itself) and no pam_tokenpin line. A wrong password is refused as a wrong PIN is (exit 1) and counted by
/// PAM's own means (pam_unix's delay, pam_faillock where the admin adds it).
struct LoginPasswordCheck {
    /// The PAM service file's name in `pamDirectory`.
    var service: String
    /// Where PAM service files live.
    var pamDirectory = "/etc/pam.d"

    /// Checks `user`'s password, asking for it once through `interaction`; with `keep`, returns the password that
    /// PAM accepted (for the login keyring), else nil.
    ///
    /// The password is held in guarded memory, copied once into PAM's own buffer, and wiped (a kept one when its
    /// owner drops it).
    @discardableResult
    func verify(user: String, _ interaction: some Interaction, keep: Bool = false) throws(ServiceError) -> SecretBytes?
    {
        try checkServiceFile()
        let request = PasswordRequest(keep: keep) { () throws(ServiceError) -> SecretBytes in
            try interaction.readSecret(.loginPassword)
        }
        let status = withExtendedLifetime(request) {
            tokenpin_pam_check_password(
                service, user,
                { context, buffer, size in
                    guard let context, let buffer else { return -1 }
                    let request = Unmanaged<PasswordRequest>.fromOpaque(context).takeUnretainedValue()
                    return request.answer(into: buffer, size: size)
                }, Unmanaged.passUnretained(request).toOpaque())
        }
        if status == tokenpin_pam_status_success() { return request.takeKept() }
        if let error = request.error { throw error }
        if tokenpin_pam_status_is_refusal(status) != 0 || status == tokenpin_pam_status_conversation_error() {
            throw .passwordRejected("the login password of \(user) was not accepted; nothing was enrolled")
        }
        let reason = String(cString: tokenpin_pam_describe(status))
        throw .configuration("the PAM service \(service) cannot check passwords (\(reason)); see /etc/pam.d/\(service)")
    }

    /// Refuses a missing service file (PAM would fall back to `other`) or one that may reach pam_tokenpin.
    func checkServiceFile() throws(ServiceError) {
        let path = pamDirectory + "/" + service
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .configuration(
                "\(path) is missing: tokenpind checks login passwords there before enrolling a PIN "
                    + "(install it, or set enrol-auth = none on a single-user machine)")
        }
        let text = String(decoding: data, as: UTF8.self)
        for line in text.split(separator: "\n") {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard let first = words.first, !first.hasPrefix("#") else { continue }
            let pullsInOthers =
                first.hasPrefix("@include")
                || words.dropFirst().prefix(1).contains { $0 == "include" || $0 == "substack" }
            if pullsInOthers || line.contains("pam_tokenpin") {
                throw .configuration(
                    "\(path) must list its modules itself (no include, substack or pam_tokenpin): "
                        + "a PIN must never vouch for the password that enrols it")
            }
        }
    }
}

/// The password answer for one PAM conversation, and the error that cancelled it.
final class PasswordRequest {
    private let read: () throws(ServiceError) -> SecretBytes
    /// Why the conversation was cancelled (the client cancelled, left, or answered out of turn).
    private(set) var error: ServiceError?
    /// Whether to keep the password after PAM has it, and the password kept.
    private let keep: Bool
    private var kept: SecretBytes?

    init(keep: Bool = false, read: @escaping () throws(ServiceError) -> SecretBytes) {
        self.keep = keep
        self.read = read
    }

    /// The password kept (once), or nil.
    func takeKept() -> SecretBytes? { kept.take() }

    /// Asks for the password and copies it into PAM's `buffer` of `size` bytes; -1 cancels the conversation.
    func answer(into buffer: UnsafeMutablePointer<CChar>, size: Int) -> Int32 {
        do {
            let secret = try read()
            let count = secret.withUnsafeBytes { bytes -> Int32 in
                guard bytes.count <= size, !bytes.contains(0) else {
                    error = .passwordRejected("that is not a password PAM can check (too long, or a NUL byte)")
                    return -1
                }
                if let base = bytes.baseAddress {
                    UnsafeMutableRawPointer(buffer).copyMemory(from: base, byteCount: bytes.count)
                }
                return Int32(bytes.count)
            }
            if keep, count >= 0 { kept = .some(consume secret) }
            return count
        } catch {
            self.error = error
            return -1
        }
    }
}
