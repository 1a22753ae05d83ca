import Foundation
import Testing
import TokenpinTestSupport

@testable import TokenpinCore

#if canImport(Glibc)
    import Glibc
#endif

func secret(_ text: String) -> SecretBytes {
    var bytes = Array(text.utf8)
    return SecretBytes(consuming: &bytes)
}

func text(_ secret: borrowing SecretBytes) -> String { secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }

/// The login keyring's crypto: a password sealed to the public key of the reserved application key opens only with
/// that key, and the name is no one's to derive.
@Suite struct LoginKeyringCryptoTests {
    @Test func aSealedPasswordOpensWithTheRecordsKeyOnly() throws {
        let vault = SecureRandom.secret(32)
        let pair = try LoginKeyring.keyPair(vaultKey: vault, user: "alice")
        let box = try SealedBox.seal(secret("correct horse"), to: pair.publicKey)
        #expect(box.count == "correct horse".utf8.count + SealedBox.overhead)
        let opened = try SealedBox.open(box, publicKey: pair.publicKey, secretKey: pair.secretKey)
        #expect(text(opened) == "correct horse")

        // Another vault key (a new record) or another user's key does not open it.
        let other = try LoginKeyring.keyPair(vaultKey: SecureRandom.secret(32), user: "alice")
        let bob = try LoginKeyring.keyPair(vaultKey: vault, user: "bob")
        #expect(bob.publicKey != pair.publicKey)
        func opens(_ publicKey: [UInt8], _ secretKey: borrowing SecretBytes) -> CryptoError.Code? {
            do {
                _ = try SealedBox.open(box, publicKey: publicKey, secretKey: secretKey)
                return nil
            } catch {
                return error.code
            }
        }
        #expect(opens(other.publicKey, other.secretKey) == .operationFailed)
        #expect(opens(bob.publicKey, bob.secretKey) == .operationFailed)
    }

    @Test func theKeyPairIsTheSameForTheSameVaultKeyAndUser() throws {
        let vault = SecureRandom.secret(32)
        let first = try LoginKeyring.keyPair(vaultKey: vault, user: "alice")
        let second = try LoginKeyring.keyPair(vaultKey: vault, user: "alice")
        #expect(first.publicKey == second.publicKey)
        let key = try ApplicationKeys.key(vaultKey: vault, user: "alice", application: LoginKeyring.application)
        #expect(try X25519.publicKey(for: key) == first.publicKey)
    }

    @Test func everyChangedByteOfABoxIsRefused() throws {
        let pair = try LoginKeyring.keyPair(vaultKey: SecureRandom.secret(32), user: "alice")
        let box = try SealedBox.seal(secret("pw"), to: pair.publicKey)
        for index in box.indices {
            var changed = box
            changed[index] ^= 0x01
            do {
                _ = try SealedBox.open(changed, publicKey: pair.publicKey, secretKey: pair.secretKey)
                Issue.record("byte \(index) changed and the box still opened")
            } catch {
                #expect(error.code == .operationFailed)
            }
        }
        do {
            _ = try SealedBox.open(
                Array(box.prefix(SealedBox.overhead - 1)), publicKey: pair.publicKey, secretKey: pair.secretKey)
            Issue.record("a short box opened")
        } catch {
            #expect(error.code == .invalidLength)
        }
    }

    @Test func aLowOrderPublicKeyIsRefused() {
        #expect {
            try SealedBox.seal(secret("pw"), to: [UInt8](repeating: 0, count: 32))
        } throws: { ($0 as? CryptoError)?.code == .invalidPublicKey }
    }

    @Test(arguments: ["tokenpin:login-keyring", "tokenpin:", "tokenpin:anything"])
    func tokenpinsOwnNamesAreNoApplicationName(name: String) {
        #expect(ApplicationName(name) == nil)
        #expect(!ApplicationName.isValid(name))
    }

    @Test func theReservedNameIsStillTheKeysName() {
        #expect(LoginKeyring.application.rawValue == "tokenpin:login-keyring")
        #expect(ApplicationName("tokenpin-login-keyring") != nil)  // only the `tokenpin:` prefix is reserved
    }

    @Test(arguments: [
        ("", false), ("a", true), (String(repeating: "x", count: 1024), true),
        (String(repeating: "x", count: 1025), false), ("a\u{0}b", false),
    ])
    func whichPasswordsAreKept(password: String, kept: Bool) {
        #expect(LoginKeyring.isKeepable(secret(password)) == kept)
    }
}

/// The file beside the record: strict, every prefix and every trailing byte refused with the reason.
@Suite struct LoginKeyringFileTests {
    let publicKey = [UInt8](repeating: 7, count: 32)

    @Test func roundTripsWithAndWithoutASealedPassword() throws {
        let empty = LoginKeyringFile(publicKey: publicKey)
        #expect(empty.encoded.count == LoginKeyringFile.headerLength)
        #expect(try LoginKeyringFile.parse(empty.encoded) == empty)
        let sealed = LoginKeyringFile(publicKey: publicKey, sealedPassword: [UInt8](repeating: 1, count: 60))
        #expect(try LoginKeyringFile.parse(sealed.encoded) == sealed)
    }

    @Test func everyPrefixIsTruncated() throws {
        let bytes = LoginKeyringFile(publicKey: publicKey, sealedPassword: [UInt8](repeating: 1, count: 60)).encoded
        for length in 0..<bytes.count {
            do {
                _ = try LoginKeyringFile.parse(Array(bytes.prefix(length)))
                Issue.record("a prefix of \(length) bytes was read")
            } catch {
                #expect(error.code == .truncated)
            }
        }
    }

    @Test func trailingBytesMagicVersionAndLengthAreNamed() {
        let good = LoginKeyringFile(publicKey: publicKey, sealedPassword: [UInt8](repeating: 1, count: 60)).encoded
        func code(_ bytes: [UInt8]) -> LoginKeyringFile.FormatError.Code? {
            do {
                _ = try LoginKeyringFile.parse(bytes)
                return nil
            } catch {
                return error.code
            }
        }
        #expect(code(good + [0]) == .trailingBytes)
        var magic = good
        magic[0] = UInt8(ascii: "X")
        #expect(code(magic) == .badMagic)
        var version = good
        version[4] = 2
        #expect(code(version) == .unknownVersion)
        var short = LoginKeyringFile(publicKey: publicKey).encoded
        short[38] = UInt8(SealedBox.overhead)  // a box with no password in it
        #expect(code(short + [UInt8](repeating: 0, count: SealedBox.overhead)) == .badLength)
    }
}

/// The file in the store: the record's rules, and it goes with the record.
@Suite struct LoginKeyringStoreTests {
    @Test func savedLoadedAndRemovedWithTheRecord() throws {
        let store = RecordStore(directory: temporaryDirectory("keyring") + "/store")
        try store.prepare()
        #expect(try store.loadLoginKeyring(user: "alice") == nil)
        let file = LoginKeyringFile(publicKey: [UInt8](repeating: 9, count: 32))
        try store.saveLoginKeyring(file, user: "alice")
        #expect(try store.loadLoginKeyring(user: "alice") == file)
        var info = stat()
        #expect(stat(store.loginKeyringPath(for: "alice"), &info) == 0 && info.st_mode & 0o777 == 0o600)
        try store.remove(user: "alice")
        #expect(try store.loadLoginKeyring(user: "alice") == nil)
    }

    @Test func aDamagedFileIsCorruptAndNamed() throws {
        let store = RecordStore(directory: temporaryDirectory("keyring") + "/store")
        try store.prepare()
        let path = store.loginKeyringPath(for: "alice")
        let bytes = LoginKeyringFile(
            publicKey: [UInt8](repeating: 9, count: 32), sealedPassword: [UInt8](repeating: 1, count: 60)
        ).encoded
        try Data(bytes.prefix(50)).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        do {
            _ = try store.loadLoginKeyring(user: "alice")
            Issue.record("a truncated file was read")
        } catch {
            #expect(error.code == .corrupt)
            #expect(error.description.contains(path))
            #expect(error.description.contains("truncated"))
        }
        chmod(path, 0o644)
        #expect { try store.loadLoginKeyring(user: "alice") } throws: { ($0 as? StoreError)?.code == .insecure }
    }
}

@Suite struct LoginKeyringConfigTests {
    @Test func offByDefaultOnWhenSaid() throws {
        #expect(Configuration().loginKeyring == false)
        var configuration = Configuration()
        try configuration.set(key: "login-keyring", value: "on")
        #expect(configuration.loginKeyring)
        try configuration.set(key: "login-keyring", value: "off")
        #expect(!configuration.loginKeyring)
        #expect(throws: Configuration.Message.self) { try configuration.set(key: "login-keyring", value: "maybe") }
        // No site rule can name the reserved key: it is no application name.
        #expect(throws: Configuration.Message.self) {
            try configuration.set(key: "app.tokenpin:login-keyring.callers", value: "any")
        }
    }
}
