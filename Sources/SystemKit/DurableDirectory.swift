/// A directory published for others to read as a whole: assembled at a staging path on the destination's file
/// system, every file in it and the directory itself flushed, then put in place in one step — exchanged with the
/// destination when one exists (`renameat2(RENAME_EXCHANGE)`), renamed into place otherwise — and the parent
/// directory flushed. Readers see the previous directory or the new one, complete.
///
/// Whatever is at the staging path when the value is released is removed: the unfinished assembly after an error,
/// the previous directory after an exchange.
package final class DurableDirectory {
    /// Where the directory is published.
    package let destination: String
    /// Where it is assembled; after an exchange, where the previous directory is until release.
    package let staging: String

    /// Creates the empty directory `staging`, which must be new and on the same file system as `destination`.
    package init(destination: String, staging: String) throws(SystemError) {
        try FileSystem.makeDirectory(staging)
        self.destination = destination
        self.staging = staging
    }

    deinit {
        FileSystem.removeTree(staging)
    }

    /// The path of `name` inside the staging directory.
    package func stagedPath(_ name: String) -> String {
        staging.hasSuffix("/") ? staging + name : staging + "/" + name
    }

    /// Moves the finished file `source` (on the same file system) into the directory as `name` and flushes it.
    package func adopt(_ source: String, as name: String) throws(SystemError) {
        let target = stagedPath(name)
        try FileSystem.rename(source, to: target)
        try FileSystem.sync(target)
    }

    /// Writes `bytes` as the new file `name` in the directory, durably (``DurableFile``).
    package func write(_ bytes: [UInt8], as name: String) throws(SystemError) {
        let file = try DurableFile(destination: stagedPath(name), replacing: false)
        try file.write(bytes)
        try file.publish()
    }

    /// Puts the assembled directory at the destination. An existing destination is exchanged with it, atomically,
    /// and ends up at ``staging``; where the exchange is unavailable it is moved aside and the new directory renamed
    /// into place (and the previous one moved back if that fails), leaving the destination briefly absent.
    package func publish() throws(SystemError) {
        try FileSystem.sync(staging)
        if FileSystem.exists(destination) {
            if try !FileSystem.exchange(staging, destination) {
                try swapByTwoRenames()
            }
        } else {
            try FileSystem.rename(staging, to: destination)
        }
        // Best effort, as for a file: the new directory is complete, durable and in place.
        try? FileSystem.sync(FileSystem.split(destination).directory)
    }

    private func swapByTwoRenames() throws(SystemError) {
        let aside = staging + ".previous"
        try FileSystem.rename(destination, to: aside)
        do {
            try FileSystem.rename(staging, to: destination)
        } catch {
            try? FileSystem.rename(aside, to: destination)
            throw error
        }
        try FileSystem.rename(aside, to: staging)
    }
}
