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

/* The type of MHD_OPTION_URI_LOG_CALLBACK, which microhttpd.h leaves unnamed. */
typedef void *(*cmicrohttpd_uri_callback)(void *cls, const char *uri, struct MHD_Connection *connection);

/* MHD_start_daemon with the options the HTTPD module uses, typed, on an
   already listening socket. Every callback gets `cls`. `extra` is an
   MHD_OPTION_END-terminated array of more options (the TLS key and
   certificate), passed through MHD_OPTION_ARRAY. */
static inline struct MHD_Daemon *
cmicrohttpd_start_daemon(unsigned int flags, int listen_fd,
                         MHD_AccessHandlerCallback handler,
                         MHD_RequestCompletedCallback completed,
                         cmicrohttpd_uri_callback begin,
                         MHD_NotifyConnectionCallback connections,
                         MHD_LogCallback logger,
                         void *cls,
                         unsigned int connection_limit,
                         unsigned int per_ip_limit,
                         unsigned int timeout_seconds,
                         size_t memory_limit,
                         size_t stack_size,
                         const struct MHD_OptionItem *extra) {
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, cls,
                            MHD_OPTION_EXTERNAL_LOGGER, logger, cls,
                            MHD_OPTION_LISTEN_SOCKET, listen_fd,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, cls,
                            MHD_OPTION_URI_LOG_CALLBACK, begin, cls,
                            MHD_OPTION_NOTIFY_CONNECTION, connections, cls,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
                            MHD_OPTION_THREAD_STACK_SIZE, stack_size,
                            MHD_OPTION_STRICT_FOR_CLIENT, (int)0,
                            MHD_OPTION_ARRAY, extra,
                            MHD_OPTION_END);
}
#endif
