#ifndef SEEDKIT_CSQLITE_SHIM_H
#define SEEDKIT_CSQLITE_SHIM_H
#include <sqlite3.h>
#endif
