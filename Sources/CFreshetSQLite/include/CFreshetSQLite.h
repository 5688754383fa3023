#ifndef C_FRESHET_SQLITE_H
#define C_FRESHET_SQLITE_H

struct sqlite3;

/// Turns off the checkpoint SQLite runs when the last connection to a database closes
/// (`SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE`), so closing leaves the write-ahead log as it is.
/// `sqlite3_db_config` is variadic, which Swift cannot call; this is its one use here.
/// Returns SQLite's result code.
int freshet_sqlite3_keep_log_on_close(struct sqlite3 *db);

#endif
