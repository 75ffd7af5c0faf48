#ifndef SEEDKIT_CPQ_SHIM_H
#define SEEDKIT_CPQ_SHIM_H
#include <libpq-fe.h>
#endif
