#ifndef SEEDKIT_CCURL_SHIM_H
#define SEEDKIT_CCURL_SHIM_H
#include <curl/curl.h>
#endif
