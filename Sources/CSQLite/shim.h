#ifndef SEEDKIT_CSQLITE_SHIM_H
#define SEEDKIT_CSQLITE_SHIM_H
#include <sqlite3.h>

/* sqlite3_db_config is variadic, which Swift cannot call: the on/off options (SQLITE_DBCONFIG_ENABLE_TRIGGER,
   SQLITE_DBCONFIG_ENABLE_VIEW, SQLITE_DBCONFIG_DEFENSIVE, ...) through a fixed signature. */
static inline int seedkit_sqlite3_db_config_flag(sqlite3 *db, int option, int on) {
    return sqlite3_db_config(db, option, on, (int *)0);
}
#endif
