import Glibc

/// A directory published for others to read as a whole: assembled at a staging path on the destination's file
/// system, every file in it and the directory itself flushed, then put in place in one step — exchanged with the
/// destination when one exists (`renameat2(RENAME_EXCHANGE)`), renamed into place otherwise — and the parent
/// directory flushed. Readers see the previous directory or the new one, complete.
///
/// Whatever is at the staging path when the value is released is removed: the unfinished assembly after an error,
/// the previous directory after an exchange — unless ``removePrevious(known:keepingRestAt:)`` took care of the
/// previous directory, removing only what it knows.
package final class DurableDirectory {
    /// Where the directory is published.
    package let destination: String
    /// Where it is assembled; after an exchange, where the previous directory is until release.
    package let staging: String
    /// Set once ``removePrevious(known:keepingRestAt:)`` ran: release then leaves the staging path alone.
    private var previousHandled = false

    /// Creates the empty directory `staging`, which must be new and on the same file system as `destination`.
    package init(destination: String, staging: String) throws(SystemError) {
        try FileSystem.makeDirectory(staging)
        self.destination = destination
        self.staging = staging
    }

    deinit {
        if !previousHandled { FileSystem.removeTree(staging) }
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

    /// After ``publish()``: removes from the previous directory (now at ``staging``) only the entries named in
    /// `known`, then the directory itself if that left it empty (`rmdir(2)`, which fails on anything added
    /// meanwhile). Whatever else it holds — an entry someone put into the published directory while it was being
    /// replaced — is not deleted: the directory is moved to `keep` (a new path on the same file system) and the
    /// names of what it still holds are returned, sorted; empty when nothing was kept.
    package func removePrevious(known: Set<String>, keepingRestAt keep: String) throws(SystemError) -> [String] {
        previousHandled = true
        guard FileSystem.isDirectory(staging) else { return [] }
        for name in try FileSystem.entries(staging) where known.contains(name) {
            let path = stagedPath(name)
            // A known name that is not a plain file (a directory someone made) is not ours either.
            guard FileSystem.isRegularFile(path) else { continue }
            guard unlink(path) == 0 || errno == ENOENT else { throw .last("remove", path: path) }
        }
        if rmdir(staging) == 0 || errno == ENOENT { return [] }
        guard errno == ENOTEMPTY || errno == EEXIST else { throw .last("remove", path: staging) }
        let foreign = try FileSystem.entries(staging).sorted()
        try FileSystem.rename(staging, to: keep)
        return foreign
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
