import CFreshetSQLite
import Foundation
import FreshetCache
import GRDB
import GRDBSQLite
import Synchronization

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The apps' database, owned by the apps (GRDB's app pattern): one SQLite file per user,
/// `freshet.sqlite` in ``defaultDirectory(environment:)``, shared by every Freshet process of
/// that user. It holds the tables of the libraries the apps use — the HTTP cache's
/// (`SQLiteCacheStore`) and the feed store's (``FeedStore``) — each built by the
/// migrations its library registers; an ``AppDatabase/Schema`` says which.
///
/// The database is opened in WAL mode with a 5 second busy timeout and foreign keys on, so
/// several processes may use it at once. The directory is created `0700` when missing; the
/// database file and its `-wal` and `-shm` companions are `0600`. Opening and migrating happen
/// under an exclusive file lock, so two processes opening a new file never run one migration
/// twice.
///
/// A file that is not a SQLite database, or fails `PRAGMA quick_check` at open, is moved aside to
/// `freshet.sqlite.corrupt-<unix time>` (with its `-wal` and `-shm`), a fresh database is built in
/// its place, and `warn` is told. Opening never traps on a bad file. The check reads every page
/// (some 60 ms for a full 100 MiB cache), so it runs only when the file changed since it last
/// passed: `freshet.sqlite-checked` holds the file's device, inode, size and modification time
/// as they were then. When this process folds the write-ahead log into the file (every 1,000
/// pages written, as SQLite's own automatic checkpoint does — every 128 for a command's
/// ``Access/serial`` database — and in ``close()`` once the log has
/// grown), it records the file again: what it wrote went through SQLite into a file it had
/// checked. Anything else that changes the file — another program, a crash before the record —
/// costs the next open a check.
public final class AppDatabase: Sendable {
    /// Which tables the database gets: the libraries whose migrations run when it opens.
    public struct Schema: Sendable {
        /// Registers the migrations, in order.
        public var register: @Sendable (inout DatabaseMigrator) -> Void

        /// A schema made by `register`.
        public init(register: @escaping @Sendable (inout DatabaseMigrator) -> Void) {
            self.register = register
        }

        /// The HTTP cache's tables alone (what `freshet proxy` needs).
        public static let cache = Schema { SQLiteCacheStore.registerMigrations(in: &$0) }
        /// The HTTP cache's tables, then the feed store's (what the apps need).
        public static let apps = Schema { migrator in
            SQLiteCacheStore.registerMigrations(in: &migrator)
            FeedStore.registerMigrations(in: &migrator)
        }
    }

    /// How the process uses the file: which GRDB writer ``writer`` is.
    public enum Access: Sendable {
        /// One connection for reads and writes (a `DatabaseQueue`): for a command that opens the
        /// database, answers and exits. A read waits while that connection writes.
        ///
        /// Opening it skips what a pool costs at every open: GRDB's check that the write-ahead
        /// log is not empty (`URL.resourceValues`, which on Linux goes through Foundation's
        /// `NSURL` and CoreFoundation: ~3.7M instructions, a millisecond, the first time in a
        /// process) and a connection per reader. A warm `freshet feed` ran 50.8M → 46.0M
        /// instructions; a warm `freshet hn --limit 500`, whose parts are now read one after
        /// another, 203.1M → 195.8M, and it was quicker (bench/RESULTS.md, Profiles).
        ///
        /// Its write-ahead log is folded into the file every ``serialFoldPages`` pages rather than
        /// SQLite's 1,000: whatever the log holds at the end, ``close()`` folds on the way out, with
        /// an `fdatasync` of all of it. A cold `freshet hn --limit 500` wrote ~1,000 pages of log
        /// and spent ~6 ms between its output and its exit; folded as it goes (while it waits for
        /// the network), ~2 ms.
        case serial
        /// Readers beside the writer (a `DatabasePool`), so that reads never wait for writes:
        /// for a server answering many requests at once, such as `freshet proxy`.
        case concurrent
    }

    /// The file name of the database inside its directory.
    public static let fileName = "freshet.sqlite"

    /// The pages of write-ahead log after which a ``Access/serial`` database folds it (a passive
    /// checkpoint, as SQLite's automatic one at 1,000 pages).
    public static let serialFoldPages: Int32 = 128

    /// The `DatabaseWriter` the libraries' stores are given: on the file, a `DatabaseQueue` or a
    /// `DatabasePool` (``Access``); or the writer given to ``init(writer:schema:)``.
    public let writer: any DatabaseWriter
    /// The database file (`<directory>/freshet.sqlite`); `nil` for a writer given directly.
    public let path: URL?
    /// The directory holding the database; `nil` for a writer given directly.
    public let directory: URL?
    /// Records the file as checked after this process's checkpoints; `nil` for a writer given directly.
    private let checkpoints: CheckpointRecorder?

    /// The directory the database lives in by default: `$FRESHET_HOME` when set and non-empty,
    /// else `$XDG_CACHE_HOME/freshet` (when set to an absolute path), else `~/.cache/freshet`
    /// (with `~` taken from `$HOME`, falling back to the account's home directory).
    public static func defaultDirectory(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> URL {
        if let home = environment["FRESHET_HOME"], !home.isEmpty {
            return URL(fileURLWithPath: home, isDirectory: true)
        }
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg, isDirectory: true)
                .appendingPathComponent("freshet", isDirectory: true)
        }
        // Without $HOME, the password database's home of this account: not NSHomeDirectory(),
        // which reads this process's own $HOME first, whatever `environment` says.
        let account = getpwuid(getuid())?.pointee.pw_dir.map { String(cString: $0) }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? account ?? NSHomeDirectory()
        return URL(fileURLWithPath: home, isDirectory: true)
            .appendingPathComponent(".cache", isDirectory: true)
            .appendingPathComponent("freshet", isDirectory: true)
    }

    /// Opens (creating if needed) `<directory>/freshet.sqlite` and brings its schema up to date.
    ///
    /// - Parameters:
    ///   - directory: Where the database lives, usually ``defaultDirectory(environment:)``.
    ///     Created with mode `0700` when missing.
    ///   - schema: The tables it gets (``Schema/apps`` by default).
    ///   - access: One connection, or readers beside the writer (``Access``; concurrent by default).
    ///   - warn: Told, in one line, when a corrupt file was moved aside and the store starts empty.
    /// - Throws: the underlying error when the directory cannot be created or the database cannot
    ///   be opened for another reason than corruption (e.g. permissions), or when a migration fails.
    public init(directory: URL, schema: Schema = .apps, access: Access = .concurrent,
                warn: @Sendable (String) -> Void = { _ in }) throws {
        let directory = directory.standardizedFileURL
        let path = directory.appendingPathComponent(Self.fileName, isDirectory: false)
        self.directory = directory
        self.path = path
        try Self.createDirectory(directory)

        // Opening, checking and migrating happen under an exclusive file lock, so two processes
        // opening a new database at once do not both run the same migration, and one process never
        // moves aside a file another has just rebuilt.
        let lock = try FileLock(path: directory.appendingPathComponent(Self.fileName + ".lock").path)
        defer { lock.unlock() }

        var migrator = DatabaseMigrator()
        schema.register(&migrator)
        let checkpoints = CheckpointRecorder(stamp: CheckStamp(path: path),
                                             threshold: access == .serial ? Self.serialFoldPages : CheckpointRecorder.sqliteDefault)
        self.checkpoints = checkpoints
        do {
            writer = try Self.open(path: path, access: access, migrator: migrator, checkpoints: checkpoints)
        } catch let failure as CorruptDatabase {
            let aside = try Self.moveAside(path)
            warn("freshet: the database \(path.path) is not usable (\(failure.reason)); it was moved aside to \(aside.path); starting with an empty store")
            writer = try Self.open(path: path, access: access, migrator: migrator, checkpoints: checkpoints)
        }
    }

    /// The apps' database on `writer` (any GRDB `DatabaseWriter`: an in-memory `DatabaseQueue`
    /// in tests, a pool the app opened itself), with `schema`'s migrations run on it. No file is
    /// created, checked or moved aside.
    /// - Throws: the migration's error.
    public init(writer: any DatabaseWriter, schema: Schema = .apps) throws {
        var migrator = DatabaseMigrator()
        schema.register(&migrator)
        try migrator.migrate(writer)
        self.writer = writer
        path = nil
        directory = nil
        checkpoints = nil
    }

    /// Closes every connection; first folds the write-ahead log into the database file (so `-wal`
    /// is empty) when it has grown past ``keptLogBytes``. Reads and writes fail afterwards.
    ///
    /// Call it before the process ends. A log is read whole at every later open (SQLite rebuilds
    /// its index from it when no other process has the file open) and restarts only after a fold,
    /// so a log nobody folds only grows, and so does every later start. A small log is left as
    /// it is: a run that changed little (a warm `feed` writes one page of counters) then ends
    /// without a checkpoint's two `fdatasync`s, and the next open, finding a log, skips GRDB's
    /// write that makes one. SQLite's own checkpoint when the last connection closes is off
    /// (`SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE`) for the same reason. What a small log holds is
    /// written but not synced (`synchronous = NORMAL`): a crash of the process loses none of
    /// it, a crash of the machine may lose those last pages of cache and feed, which the next
    /// run fetches again.
    ///
    /// Emptying the log waits for other processes' readers and writers (a busy `freshet proxy`
    /// on the same file always has some) for at most 200 ms, not the 5 s busy timeout;
    /// when they are still there, the log is left to the last process that closes.
    public func close() throws {
        let folds = path.map { Self.logBytes(of: $0) > Self.keptLogBytes } ?? false
        if folds {
            try? writer.writeWithoutTransaction { db in
                sqlite3_busy_timeout(db.sqliteConnection, Self.closeWaitMilliseconds)
                _ = try db.checkpoint(.truncate)
            }
        }
        try writer.close()
        if folds { checkpoints?.recordIfChecked() }
    }

    /// The largest write-ahead log ``close()`` leaves as it is: 64 pages of 4 KiB, which the next
    /// open reads in well under a millisecond.
    public static let keptLogBytes = 256 * 1024

    /// The size of `path`'s write-ahead log file, 0 when there is none.
    static func logBytes(of path: URL) -> Int {
        var info = stat()
        return stat(path.path + "-wal", &info) == 0 ? Int(info.st_size) : 0
    }

    /// How long ``close()`` waits for other processes to let it empty the log.
    private static let closeWaitMilliseconds: Int32 = 200

    // MARK: - Opening

    /// The paths of the database and its companion files.
    static func companionPaths(of path: URL) -> [String] {
        [path.path, path.path + "-wal", path.path + "-shm"]
    }

    private static func createDirectory(_ directory: URL) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory) {
            return // An existing directory keeps the mode its owner chose.
        }
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        _ = chmod(directory.path, 0o700)
    }

    /// Opens the writer, checks the file, runs the migrations and tightens file modes. Throws
    /// ``CorruptDatabase`` when the file is not a usable SQLite database.
    private static func open(path: URL, access: Access, migrator: DatabaseMigrator,
                             checkpoints: CheckpointRecorder) throws -> any DatabaseWriter {
        let isEmpty = prepareFile(path)
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        configuration.foreignKeysEnabled = true
        configuration.label = "freshet"
        configuration.prepareDatabase { db in
            if access == .serial {
                // What GRDB does for a pool's writer, but for its check of the log, which only a
                // pool's readers need. The mode is the file's: a no-op once the file has it. On a
                // new, empty file the switch writes its first page through a rollback journal:
                // unsynced, as a crash then leaves nothing to lose (four `fdatasync`s, ~1.3 ms).
                // A file with pages (one in another mode, from elsewhere) switches synced.
                if isEmpty { try db.execute(sql: "PRAGMA synchronous = OFF") }
                let mode = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
                guard mode == "wal" else {
                    throw DatabaseError(message: "could not turn on the write-ahead log: journal mode \(mode ?? "none")")
                }
            }
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            _ = freshet_sqlite3_keep_log_on_close(db.sqliteConnection)
            checkpoints.install(on: db)
        }

        let writer: any DatabaseWriter
        do {
            switch access {
            case .serial: writer = try DatabaseQueue(path: path.path, configuration: configuration)
            case .concurrent: writer = try DatabasePool(path: path.path, configuration: configuration)
            }
        } catch {
            throw CorruptDatabase(error) ?? error
        }
        do {
            let checked = checkpoints.stamp.matchesFile()
            if !checked {
                let problems = try writer.read { db in try String.fetchAll(db, sql: "PRAGMA quick_check") }
                if problems != ["ok"] {
                    throw CorruptDatabase(reason: "quick_check: " + problems.prefix(3).joined(separator: "; "))
                }
            }
            checkpoints.fileIsChecked()
            try migrator.migrate(writer)
            // Migrations wrote, so the WAL and shared-memory files exist now. SQLite creates them
            // with the database file's mode; make sure, in case they predate this code.
            for file in companionPaths(of: path) { tighten(file) }
            if !checked { checkpoints.stamp.record() }
            return writer
        } catch {
            try? writer.close()
            throw CorruptDatabase(error) ?? error
        }
    }

    /// Creates the database file `0600` before SQLite sees it (SQLite then gives `-wal` and `-shm`
    /// the same mode), or tightens an existing file's mode. No process-wide `umask` is changed.
    /// Returns whether the file holds no byte yet (asked of the descriptor already open, not of
    /// SQLite with a statement at every open).
    private static func prepareFile(_ path: URL) -> Bool {
        var isEmpty = false
        let descriptor = Glue.open(path.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if descriptor >= 0 {
            _ = fchmod(descriptor, 0o600)
            var info = stat()
            isEmpty = fstat(descriptor, &info) == 0 && info.st_size == 0
            _ = Glue.close(descriptor)
        }
        for file in companionPaths(of: path) { tighten(file) }
        return isEmpty
    }

    private static func tighten(_ file: String) {
        var info = stat()
        if stat(file, &info) == 0, info.st_mode & 0o777 != 0o600 {
            _ = chmod(file, 0o600)
        }
    }

    /// Renames the database and its companions to `<name>.corrupt-<unix time>[-n]…` and returns the
    /// new database path.
    private static func moveAside(_ path: URL) throws -> URL {
        let stamp = Int(Date().timeIntervalSince1970)
        var aside = URL(fileURLWithPath: path.path + ".corrupt-\(stamp)")
        var attempt = 1
        while FileManager.default.fileExists(atPath: aside.path) {
            attempt += 1
            aside = URL(fileURLWithPath: path.path + ".corrupt-\(stamp)-\(attempt)")
        }
        for (from, to) in zip(companionPaths(of: path), companionPaths(of: aside))
        where FileManager.default.fileExists(atPath: from) {
            if rename(from, to) != 0 {
                throw CocoaError(.fileWriteUnknown, userInfo: [
                    NSFilePathErrorKey: from,
                    NSUnderlyingErrorKey: POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO),
                ])
            }
        }
        return aside
    }
}

/// What `freshet.sqlite-checked` records: the database file as it was when `PRAGMA quick_check`
/// last passed (device, inode, size, modification time to the nanosecond). Read at open, under its
/// file lock; written then and after this process's checkpoints. Unreadable, unwritable or torn,
/// it only means the next open checks again.
private struct CheckStamp: Sendable {
    let path: URL
    var stampPath: String { path.path + "-checked" }

    /// The file's identity now; nil when it cannot be read.
    private func identity() -> String? {
        var info = stat()
        guard stat(path.path, &info) == 0 else { return nil }
        #if canImport(Darwin)
        let modified = info.st_mtimespec
        #else
        let modified = info.st_mtim
        #endif
        return "\(info.st_dev) \(info.st_ino) \(info.st_size) \(modified.tv_sec) \(modified.tv_nsec)\n"
    }

    /// Whether the file is as it was when it last passed the check.
    func matchesFile() -> Bool {
        guard let now = identity(), let data = FileManager.default.contents(atPath: stampPath) else { return false }
        return String(decoding: data, as: UTF8.self) == now
    }

    /// Records the file as checked (best effort, `0600`, not synced: a stamp lost or torn in a
    /// crash only means one more check).
    func record() {
        guard let now = identity() else { return }
        let descriptor = Glue.open(stampPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return }
        let bytes = Array(now.utf8)
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        _ = Glue.close(descriptor)
        if written != bytes.count { _ = unlink(stampPath) }
    }
}

/// Takes over SQLite's automatic checkpoint (`sqlite3_wal_hook` replaces it) to do the same —
/// a passive checkpoint once the log holds ``threshold`` pages — and then record the file as
/// checked, once this process has checked it (or found it recorded as checked) at open.
private final class CheckpointRecorder: Sendable {
    /// SQLite's default automatic checkpoint threshold, in pages of log.
    static let sqliteDefault: Int32 = 1000

    let stamp: CheckStamp
    /// The pages of log that start a checkpoint.
    let threshold: Int32
    private let checked = Atomic<Bool>(false)

    init(stamp: CheckStamp, threshold: Int32) {
        self.stamp = stamp
        self.threshold = threshold
    }

    /// Says the file passed the check, or was recorded as having passed it.
    func fileIsChecked() {
        checked.store(true, ordering: .releasing)
    }

    /// Records the file after a checkpoint, when it had been checked.
    func recordIfChecked() {
        if checked.load(ordering: .acquiring) { stamp.record() }
    }

    /// Installs the hook on `db`'s connection. The writer's configuration, which holds `self`,
    /// outlives every connection, so the hook's unretained pointer stays valid.
    func install(on db: Database) {
        sqlite3_wal_hook(db.sqliteConnection, { context, connection, name, pages in
            guard let context else { return SQLITE_OK }
            let recorder = Unmanaged<CheckpointRecorder>.fromOpaque(context).takeUnretainedValue()
            guard pages >= recorder.threshold else { return SQLITE_OK }
            var logged: Int32 = 0
            var folded: Int32 = 0
            let code = sqlite3_wal_checkpoint_v2(connection, name, SQLITE_CHECKPOINT_PASSIVE, &logged, &folded)
            if code == SQLITE_OK, folded > 0 { recorder.recordIfChecked() }
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }
}

/// The file is not a SQLite database, or SQLite finds it damaged.
private struct CorruptDatabase: Error {
    var reason: String

    init(reason: String) {
        self.reason = reason
    }

    /// Classifies `error`: nil when it is not about a damaged file.
    init?(_ error: any Error) {
        if let error = error as? CorruptDatabase {
            self = error
            return
        }
        guard let error = error as? DatabaseError,
              error.resultCode == .SQLITE_CORRUPT || error.resultCode == .SQLITE_NOTADB
        else { return nil }
        reason = error.message ?? "\(error.resultCode)"
    }
}

/// An exclusive `flock` on a lock file, held until ``unlock()``.
private struct FileLock {
    let descriptor: Int32

    init(path: String) throws {
        descriptor = Glue.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else {
                let code = errno
                _ = Glue.close(descriptor)
                throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
            }
        }
    }

    func unlock() {
        _ = flock(descriptor, LOCK_UN)
        _ = Glue.close(descriptor)
    }
}

/// Names that clash with members in scope.
private enum Glue {
    static func open(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 {
        #if canImport(Darwin)
        Darwin.open(path, flags, mode)
        #elseif canImport(Glibc)
        Glibc.open(path, flags, mode)
        #else
        Musl.open(path, flags, mode)
        #endif
    }

    static func close(_ descriptor: Int32) -> Int32 {
        #if canImport(Darwin)
        Darwin.close(descriptor)
        #elseif canImport(Glibc)
        Glibc.close(descriptor)
        #else
        Musl.close(descriptor)
        #endif
    }
}
