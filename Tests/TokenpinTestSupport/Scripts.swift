import Foundation

/// The site's `pin-check` program the tests use unless they give their own body: it refuses a PIN that ends in
/// the current year, saying why.
package let currentYearPINCheck = """
    read -r pin
    year=$(date +%Y)
    case "$pin" in *"$year") echo "ends in the current year ($year)"; exit 1 ;; esac
    exit 0
    """

/// Writes `body` as an executable `/bin/sh` script (mode 0755) in `directory`, named `prefix-<UUID>`; returns its
/// path.
package func executableScript(_ body: String, in directory: String, prefix: String = "script") throws -> String {
    let path = directory + "/\(prefix)-\(UUID().uuidString)"
    try ("#!/bin/sh\n" + body + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
    return path
}
