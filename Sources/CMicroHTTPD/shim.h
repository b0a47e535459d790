#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <microhttpd.h>

/*
 * Swift cannot call variadic C functions nor see function-like macros, and cannot cast a
 * function pointer to `intptr_t`. These small wrappers, named after what they wrap, cover what
 * the HTTPServer module needs from libmicrohttpd 0.9.75.
 */

/* The signature MHD_OPTION_URI_LOG_CALLBACK expects (not a typedef in microhttpd.h). */
typedef void *(*herald_mhd_uri_log_callback)(void *cls, const char *uri, struct MHD_Connection *connection);

/* MHD_start_daemon without varargs: every option comes from `options`, an array terminated by
   herald_mhd_option_end(), passed on through MHD_OPTION_ARRAY. No accept policy callback. */
static inline struct MHD_Daemon *herald_mhd_start_daemon(unsigned int flags, uint16_t port,
                                                         MHD_AccessHandlerCallback handler, void *handler_cls,
                                                         const struct MHD_OptionItem *options) {
    return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_cls, MHD_OPTION_ARRAY, options,
                            MHD_OPTION_END);
}

/* MHD_OptionItem builders, one per argument shape that MHD_OPTION_ARRAY distinguishes. */
static inline struct MHD_OptionItem herald_mhd_option_end(void) {
    struct MHD_OptionItem item = {MHD_OPTION_END, 0, NULL};
    return item;
}

/* Options taking an `unsigned int` or a `size_t` (both travel in `value`). */
static inline struct MHD_OptionItem herald_mhd_option_number(enum MHD_OPTION option, size_t number) {
    struct MHD_OptionItem item = {option, (intptr_t)number, NULL};
    return item;
}

/* Options taking one pointer, e.g. MHD_OPTION_SOCK_ADDR. */
static inline struct MHD_OptionItem herald_mhd_option_pointer(enum MHD_OPTION option, void *pointer) {
    struct MHD_OptionItem item = {option, 0, pointer};
    return item;
}

static inline struct MHD_OptionItem herald_mhd_option_notify_completed(MHD_RequestCompletedCallback callback,
                                                                       void *cls) {
    struct MHD_OptionItem item = {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)callback, cls};
    return item;
}

static inline struct MHD_OptionItem herald_mhd_option_uri_log_callback(herald_mhd_uri_log_callback callback,
                                                                       void *cls) {
    struct MHD_OptionItem item = {MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)callback, cls};
    return item;
}

static inline struct MHD_OptionItem herald_mhd_option_notify_connection(MHD_NotifyConnectionCallback callback,
                                                                        void *cls) {
    struct MHD_OptionItem item = {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)callback, cls};
    return item;
}

static inline struct MHD_OptionItem herald_mhd_option_external_logger(MHD_LogCallback callback, void *cls) {
    struct MHD_OptionItem item = {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)callback, cls};
    return item;
}

/* MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT): the bound port, 0 when unknown. */
static inline uint16_t herald_mhd_get_daemon_info_bind_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/* MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS), or NULL. */
static inline const struct sockaddr *herald_mhd_get_connection_info_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}

/* MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD), or -1. */
static inline int herald_mhd_get_connection_info_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/* MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT): what the
   MHD_OPTION_NOTIFY_CONNECTION callback stored for the connection, or NULL. */
static inline void *herald_mhd_get_connection_info_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

/* Whether a MHD_NotifyConnectionCallback reports a new connection (else: a closed one). */
static inline bool herald_mhd_connection_started(enum MHD_ConnectionNotificationCode code) {
    return code == MHD_CONNECTION_NOTIFY_STARTED;
}

/* vsnprintf for MHD_LogCallback's `va_list`, consumed once. */
static inline int herald_mhd_format_log_message(char *buffer, size_t size, const char *format, va_list arguments) {
    return vsnprintf(buffer, size, format, arguments);
}

/* MHD_CONTENT_READER_END_WITH_ERROR is a cast macro. */
static inline ssize_t herald_mhd_content_reader_end_with_error(void) {
    return MHD_CONTENT_READER_END_WITH_ERROR;
}

#endif
