import Foundation
import Testing
import TokenpinCore
import TokenpinPKCS11
import TokenpinTestSupport

/// A program run to its end: its status and what it printed.
struct ProgramResult {
    var status: Int32
    var output: String
    var errors: String
}

/// Runs `program` with `arguments` in `environment` (nil: this process's), `input` on its standard input (nil:
/// none), and waits for it.
@discardableResult
func run(_ program: String, _ arguments: [String], environment: [String: String]? = nil, input: String? = nil)
    throws -> ProgramResult
{
    let process = Process()
    process.executableURL = URL(fileURLWithPath: program)
    process.arguments = arguments
    if let environment { process.environment = environment }
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    let standardInput = Pipe()
    process.standardInput = input == nil ? FileHandle.nullDevice : standardInput
    try process.run()
    if let input {
        standardInput.fileHandleForWriting.write(Data(input.utf8))
        try standardInput.fileHandleForWriting.close()
    }
    let out = output.fileHandleForReading.readDataToEndOfFile()
    let err = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ProgramResult(
        status: process.terminationStatus, output: String(decoding: out, as: UTF8.self),
        errors: String(decoding: err, as: UTF8.self))
}

/// The first of `paths` that exists.
func firstExisting(_ paths: [String]) -> String? {
    paths.first { FileManager.default.fileExists(atPath: $0) }
}

/// The real programs and modules these tests use, where this machine has them (the Makefile's TEST_PACKAGES
/// install them: softhsm2, opensc, gnutls-bin).
enum Tools {
    static let softHSMModule = firstExisting([
        "/usr/lib/softhsm/libsofthsm2.so", "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
        "/usr/lib/aarch64-linux-gnu/softhsm/libsofthsm2.so",
    ])
    static let openSCModule = firstExisting([
        "/usr/lib/x86_64-linux-gnu/opensc-pkcs11.so", "/usr/lib/aarch64-linux-gnu/opensc-pkcs11.so",
        "/usr/lib/opensc-pkcs11.so",
    ])
    static let softHSMUtil = firstExisting(["/usr/bin/softhsm2-util"])
    static let pkcs11Tool = firstExisting(["/usr/bin/pkcs11-tool"])
    static let p11tool = firstExisting(["/usr/bin/p11tool"])
    static let compiler = firstExisting(["/usr/bin/cc", "/usr/bin/gcc"])
    static let hasSoftHSM = softHSMModule != nil && softHSMUtil != nil && pkcs11Tool != nil

    /// The helper next to the test bundle (SwiftPM builds it first: the test target depends on it).
    static var helper: String {
        let bundle = CommandLine.arguments.first.map { URL(fileURLWithPath: $0).deletingLastPathComponent().path }
        return (bundle ?? ".build/debug") + "/tokenpin-pkcs11"
    }

    /// The CLI next to the test bundle (built first too: the test target depends on it).
    static var tokenpin: String {
        URL(fileURLWithPath: helper).deletingLastPathComponent().path + "/tokenpin"
    }
}

/// A private SoftHSM2: its own `SOFTHSM2_CONF` and token directory, removed at the end; tokens made by
/// `softhsm2-util`, keys by `pkcs11-tool`, as an administrator would.
final class SoftHSM {
    let directory: String
    let configuration: String

    init() throws {
        directory = temporaryDirectory("softhsm")
        configuration = directory + "/softhsm2.conf"
        try FileManager.default.createDirectory(atPath: directory + "/tokens", withIntermediateDirectories: true)
        try """
        directories.tokendir = \(directory)/tokens
        objectstore.backend = file
        log.level = ERROR
        slots.removable = false
        """.write(toFile: configuration, atomically: true, encoding: .utf8)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    var module: String { Tools.softHSMModule ?? "/usr/lib/softhsm/libsofthsm2.so" }

    /// The environment the helper and the tools get: this SoftHSM's configuration, nothing else of ours.
    var environment: [String: String] {
        ["SOFTHSM2_CONF": configuration, "PATH": "/usr/bin:/bin", "HOME": directory]
    }

    var environmentList: [String] { environment.map { "\($0.key)=\($0.value)" } }

    /// Makes a token in the next free slot.
    func initToken(label: String, pin: String = "123456", soPIN: String = "12345678") throws {
        let result = try run(
            Tools.softHSMUtil!, ["--init-token", "--free", "--label", label, "--pin", pin, "--so-pin", soPIN],
            environment: environment)
        guard result.status == 0 else { throw TestSupportError("softhsm2-util: \(result.output)\(result.errors)") }
    }

    /// Generates a key pair on the token `label` with pkcs11-tool: `EC:prime256v1`, `EC:secp384r1`,
    /// `EC:brainpoolP256r1`, `rsa:2048`.
    func generateKey(token: String, type: String, id: String, label: String, pin: String = "123456") throws {
        let usage = type.hasPrefix("EC") ? "--usage-derive" : "--usage-decrypt"
        let result = try pkcs11Tool([
            "--token-label", token, "--login", "--pin", pin, "--keypairgen", "--key-type", type, "--id", id,
            "--label", label, usage,
        ])
        guard result.status == 0 else { throw TestSupportError("pkcs11-tool: \(result.output)\(result.errors)") }
    }

    /// Runs pkcs11-tool on this SoftHSM's module.
    func pkcs11Tool(_ arguments: [String]) throws -> ProgramResult {
        try run(Tools.pkcs11Tool!, ["--module", module] + arguments, environment: environment)
    }

    /// A helper for this SoftHSM's module.
    func helper(timeout: Int = 20_000) throws -> PKCS11Helper {
        try PKCS11Helper.start(
            module: .path(module), timeout: timeout, executable: Tools.helper, environment: environmentList)
    }
}

/// A secret from raw bytes, for comparisons.
func secretBytes(_ bytes: [UInt8]) -> SecretBytes {
    var copy = bytes
    return SecretBytes(consuming: &copy)
}

/// The bytes of a secret, for test comparisons only.
func bytes(_ secret: borrowing SecretBytes) -> [UInt8] {
    secret.withUnsafeBytes { Array($0) }
}
