/// Checks of the settings as a whole, after every file was read: combinations no PIN could satisfy.
extension Configuration {
    /// Refuses settings that contradict each other, naming both keys; `files` are the files that were read
    /// (the error names the last, where an override belongs).
    public func checkCombinations(files: [String]) throws(ConfigError) {
        let file = files.last ?? "configuration"
        if policy.minLength > policy.maxLength {
            throw ConfigError(
                file: file, line: 0,
                message: "pin-min-length (\(policy.minLength)) is above pin-max-length "
                    + "(\(policy.maxLength)): no PIN could be set")
        }
        if policy.minUnique > policy.maxLength {
            throw ConfigError(
                file: file, line: 0,
                message: "pin-min-unique (\(policy.minUnique)) is above pin-max-length "
                    + "(\(policy.maxLength)): no PIN could have that many different characters")
        }
    }
}
