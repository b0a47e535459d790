#ifndef CHERALD_SHIMS_H
#define CHERALD_SHIMS_H
// System calls and macros Glibc does not expose to Swift. Functions are prefixed cherald_.
// Every function returns what the wrapped call returns (-1 and errno on failure) unless its
// comment says otherwise.
#include <spawn.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

// MARK: epoll

/// The readiness bits Herald uses, equal to the kernel's EPOLL* values.
enum {
    CHERALD_EPOLLIN = 0x001,
    CHERALD_EPOLLOUT = 0x004,
    CHERALD_EPOLLERR = 0x008,
    CHERALD_EPOLLHUP = 0x010,
    CHERALD_EPOLLRDHUP = 0x2000,
};

/// The operations of epoll_ctl.
enum {
    CHERALD_EPOLL_CTL_ADD = 1,
    CHERALD_EPOLL_CTL_DEL = 2,
    CHERALD_EPOLL_CTL_MOD = 3,
};

/// An epoll event without the packed layout of `struct epoll_event` on x86-64, which Swift
/// cannot import safely.
typedef struct cherald_epoll_event {
    uint32_t events;
    uint64_t data;
} cherald_epoll_event;

/// epoll_create1(EPOLL_CLOEXEC).
int cherald_epoll_create(void);
/// epoll_ctl with the event built from `events` and `data`.
int cherald_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data);
/// epoll_wait into `events` (at most 256 are returned per call, whatever `max_events` says).
/// Retries on EINTR.
int cherald_epoll_wait(int epfd, cherald_epoll_event *events, int max_events, int timeout_ms);

// MARK: eventfd

/// eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC).
int cherald_eventfd_create(void);
/// Adds one to the counter (wakes a waiting epoll). Returns 0, or -1 with errno.
int cherald_eventfd_signal(int fd);
/// Reads and so resets the counter. Returns 0, or -1 with errno (EAGAIN when it was zero).
int cherald_eventfd_drain(int fd);

// MARK: sockets

/// socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0).
int cherald_socket_stream(int family);
/// accept4 with SOCK_NONBLOCK | SOCK_CLOEXEC, storing the peer address.
int cherald_accept(int fd, struct sockaddr_storage *address, socklen_t *length);
/// Sets TCP_NODELAY.
int cherald_set_nodelay(int fd);
/// Sets SO_REUSEADDR.
int cherald_set_reuseaddr(int fd);
/// Sets IPV6_V6ONLY to `value`.
int cherald_set_v6only(int fd, int value);
/// The pending error of a socket (SO_ERROR): 0 when the connect succeeded, an errno value
/// otherwise; -1 when getsockopt itself failed.
int cherald_socket_error(int fd);
/// send(fd, buffer, length, MSG_NOSIGNAL): never raises SIGPIPE.
long cherald_send(int fd, const void *buffer, size_t length);
/// The port of a bound socket (getsockname), or -1.
int cherald_local_port(int fd);
/// Formats the address as numeric host text (inet_ntop) into `out`; returns the port, or -1.
int cherald_address_to_string(const struct sockaddr *address, char *out, size_t out_length);

// MARK: threads and signals

/// Blocks SIGPIPE for the calling thread, so that a write to a closed socket by a library that
/// cannot pass MSG_NOSIGNAL (OpenSSL's socket BIO) fails with EPIPE instead of killing the process.
int cherald_block_sigpipe_in_thread(void);
/// CLOCK_MONOTONIC in nanoseconds.
uint64_t cherald_monotonic_nanoseconds(void);
/// Fills `buffer` with `length` bytes from the kernel's CSPRNG (getrandom(2), blocking only until
/// the pool is first initialised), retrying interrupted and short reads. 0, or -1 and errno.
int cherald_getrandom(void *buffer, size_t length);

// MARK: child processes (glibc extensions, declared only with _GNU_SOURCE)

/// pipe2(fds, O_CLOEXEC): both ends close on exec, so no other child inherits them.
int cherald_pipe_cloexec(int fds[2]);
/// posix_spawn_file_actions_addchdir_np: the child changes to `path` before exec. Returns 0 or
/// an error number, as the posix_spawn functions do.
int cherald_spawn_addchdir(posix_spawn_file_actions_t *actions, const char *path);
/// posix_spawn_file_actions_addclosefrom_np: the child closes every descriptor from `from` up.
/// Returns 0 or an error number.
int cherald_spawn_addclosefrom(posix_spawn_file_actions_t *actions, int from);

// MARK: libcurl (variadic setopt/getinfo, typed per argument kind)

#include <curl/curl.h>

/// The signature of CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION.
typedef size_t (*cherald_curl_data_callback)(char *data, size_t size, size_t count, void *user);
/// The signature of CURLOPT_OPENSOCKETFUNCTION.
typedef curl_socket_t (*cherald_curl_opensocket_callback)(void *user, curlsocktype purpose,
                                                          struct curl_sockaddr *address);

/// curl_easy_setopt with a `long` argument.
static inline CURLcode cherald_curl_easy_setopt_long(CURL *easy, CURLoption option, long value) {
    return curl_easy_setopt(easy, option, value);
}
/// curl_easy_setopt with a `curl_off_t` argument (CURLOPT_POSTFIELDSIZE_LARGE).
static inline CURLcode cherald_curl_easy_setopt_off_t(CURL *easy, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(easy, option, value);
}
/// curl_easy_setopt with a string (copied by libcurl, except CURLOPT_POSTFIELDS) or a `void *`.
static inline CURLcode cherald_curl_easy_setopt_pointer(CURL *easy, CURLoption option, const void *value) {
    return curl_easy_setopt(easy, option, value);
}
/// curl_easy_setopt with a header or resolve list (not copied: keep it until the transfer ends).
static inline CURLcode cherald_curl_easy_setopt_slist(CURL *easy, CURLoption option, struct curl_slist *list) {
    return curl_easy_setopt(easy, option, list);
}
/// CURLOPT_WRITEFUNCTION or CURLOPT_HEADERFUNCTION.
static inline CURLcode cherald_curl_easy_setopt_data_callback(CURL *easy, CURLoption option,
                                                              cherald_curl_data_callback callback) {
    return curl_easy_setopt(easy, option, callback);
}
/// CURLOPT_OPENSOCKETFUNCTION.
static inline CURLcode cherald_curl_easy_setopt_opensocket(CURL *easy, cherald_curl_opensocket_callback callback) {
    return curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, callback);
}
/// CURLOPT_CAINFO_BLOB with a copy of `length` bytes at `data` (PEM certificates).
static inline CURLcode cherald_curl_easy_set_cainfo_blob(CURL *easy, const void *data, size_t length) {
    struct curl_blob blob;
    blob.data = (void *)data;
    blob.len = length;
    blob.flags = CURL_BLOB_COPY;
    return curl_easy_setopt(easy, CURLOPT_CAINFO_BLOB, &blob);
}
/// curl_easy_getinfo for a `long` result.
static inline CURLcode cherald_curl_easy_getinfo_long(CURL *easy, CURLINFO info, long *value) {
    return curl_easy_getinfo(easy, info, value);
}
/// curl_easy_getinfo for a string result (owned by libcurl; NULL when unknown).
static inline CURLcode cherald_curl_easy_getinfo_string(CURL *easy, CURLINFO info, const char **value) {
    return curl_easy_getinfo(easy, info, value);
}
/// curl_multi_setopt with a `long` argument.
static inline CURLMcode cherald_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}
/// The address a CURLOPT_OPENSOCKETFUNCTION callback is asked to connect to.
static inline const struct sockaddr *cherald_curl_sockaddr_address(const struct curl_sockaddr *address) {
    return &address->addr;
}
/// The easy handle and result of a CURLMSG_DONE message (`result` is left alone otherwise).
static inline CURL *cherald_curl_msg_done(const CURLMsg *message, CURLcode *result) {
    if (message->msg != CURLMSG_DONE) return NULL;
    *result = message->data.result;
    return message->easy_handle;
}

#endif
