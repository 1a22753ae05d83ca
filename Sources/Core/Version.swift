/// The version of tokenpin, printed by `tokenpin --version` and `tokenpind --version`.
///
/// This line is the one place the version is written: the Makefile reads it from here for the Debian package.
public let tokenpinVersion = "0.1.0"
