#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <microhttpd.h>

/* MHD_start_daemon and MHD_get_connection_info are variadic. */
static inline const union MHD_ConnectionInfo *
cmicrohttpd_connection_info(struct MHD_Connection *c, enum MHD_ConnectionInfoType t) {
    return MHD_get_connection_info(c, t);
}
static inline const union MHD_DaemonInfo *
cmicrohttpd_daemon_info(struct MHD_Daemon *d, enum MHD_DaemonInfoType t) {
    return MHD_get_daemon_info(d, t);
}
#endif
