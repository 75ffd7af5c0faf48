import Foundation

/// Standard streams and input files for the commands.
enum Terminal {
    static func out(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    static func out(bytes: [UInt8]) {
        FileHandle.standardOutput.write(Data(bytes))
    }

    static func err(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// Reads the file at `path`, or standard input when `path` is nil or `-`.
    static func readInput(_ path: String?) throws(InputError) -> [UInt8] {
        if path == nil || path == "-" {
            return Array(FileHandle.standardInput.readDataToEndOfFile())
        }
        guard let data = FileManager.default.contents(atPath: path!) else {
            throw InputError(path: path!)
        }
        return Array(data)
    }

    /// An input file that cannot be read.
    struct InputError: Error {
        let path: String
        var message: String { "cannot read \(path)" }
    }
}
