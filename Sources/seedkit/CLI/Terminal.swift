import Foundation

/// Standard streams and input files for the commands.
enum Terminal {
    static func out(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    static func out(bytes: [UInt8]) {
        FileHandle.standardOutput.write(Data(bytes))
    }

    /// A human-readable message on standard error, with every control character but line feed and tab shown
    /// escaped (``printable(_:)``): messages carry text a server or a file chose (error codes, scope IDs), and a
    /// terminal must not run it.
    static func err(_ text: String) {
        FileHandle.standardError.write(Data(printable(text).utf8))
    }

    /// A progress display's own drawing on standard error (carriage return, erase-line), written as is: only
    /// numbers and the command's own words go through here.
    static func progress(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// `text` with C0 controls other than line feed and tab, DEL and C1 controls replaced by `\xHH` / `\u{HHHH}`.
    static func printable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            guard isControl(scalar) else {
                result.append(scalar)
                continue
            }
            let hex = String(scalar.value, radix: 16, uppercase: true)
            let escaped = scalar.value < 0x80 ? "\\x" + (hex.count < 2 ? "0" + hex : hex) : "\\u{" + hex + "}"
            result.append(contentsOf: escaped.unicodeScalars)
        }
        return String(result)
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x0A, 0x09: false
        case 0x00...0x1F, 0x7F...0x9F: true
        default: false
        }
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
