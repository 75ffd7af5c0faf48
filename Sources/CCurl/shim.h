#ifndef SEEDKIT_CCURL_SHIM_H
#define SEEDKIT_CCURL_SHIM_H
#include <curl/curl.h>

/* curl_easy_setopt is variadic, which Swift cannot call: one fixed-signature wrapper per
   argument type that libcurl documents (long, curl_off_t, pointer, the two callback types). */
static inline CURLcode seedkit_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode seedkit_curl_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode seedkit_curl_setopt_pointer(CURL *handle, CURLoption option, const void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode seedkit_curl_setopt_write(CURL *handle, CURLoption option, curl_write_callback value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode seedkit_curl_setopt_xferinfo(CURL *handle, CURLoption option, curl_xferinfo_callback value) {
    return curl_easy_setopt(handle, option, value);
}
#endif
