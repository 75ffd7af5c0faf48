#ifndef SEEDKIT_CZSTD_SHIM_H
#define SEEDKIT_CZSTD_SHIM_H
#include <zstd.h>
#endif
