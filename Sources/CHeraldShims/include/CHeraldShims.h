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

#endif
