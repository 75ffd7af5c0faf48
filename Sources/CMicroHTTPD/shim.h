#ifndef SEEDKIT_CMICROHTTPD_SHIM_H
#define SEEDKIT_CMICROHTTPD_SHIM_H
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <stdarg.h>
#include <microhttpd.h>

/* MHD_get_connection_info is variadic, which Swift does not import: these two read what the server needs. */

/* The connection's socket, or -1. */
static inline int seedkit_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/* The peer's numeric address (IPv4 or IPv6 text) in `buffer`; 0 on success, -1 otherwise. */
static inline int seedkit_mhd_client_address(struct MHD_Connection *connection, char *buffer, socklen_t size) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) return -1;
    const struct sockaddr *address = info->client_addr;
    const void *bytes;
    if (address->sa_family == AF_INET) {
        bytes = &((const struct sockaddr_in *)(const void *)address)->sin_addr;
    } else if (address->sa_family == AF_INET6) {
        bytes = &((const struct sockaddr_in6 *)(const void *)address)->sin6_addr;
    } else {
        return -1;
    }
    return inet_ntop(address->sa_family, bytes, buffer, size) == NULL ? -1 : 0;
}
#endif
