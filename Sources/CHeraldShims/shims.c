#define _GNU_SOURCE
#include "CHeraldShims.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <spawn.h>
#include <pthread.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

_Static_assert(CHERALD_EPOLLIN == EPOLLIN, "EPOLLIN");
_Static_assert(CHERALD_EPOLLOUT == EPOLLOUT, "EPOLLOUT");
_Static_assert(CHERALD_EPOLLERR == EPOLLERR, "EPOLLERR");
_Static_assert(CHERALD_EPOLLHUP == EPOLLHUP, "EPOLLHUP");
_Static_assert(CHERALD_EPOLLRDHUP == EPOLLRDHUP, "EPOLLRDHUP");
_Static_assert(CHERALD_EPOLL_CTL_ADD == EPOLL_CTL_ADD, "EPOLL_CTL_ADD");
_Static_assert(CHERALD_EPOLL_CTL_DEL == EPOLL_CTL_DEL, "EPOLL_CTL_DEL");
_Static_assert(CHERALD_EPOLL_CTL_MOD == EPOLL_CTL_MOD, "EPOLL_CTL_MOD");

int cherald_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int cherald_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event event;
    memset(&event, 0, sizeof(event));
    event.events = events;
    event.data.u64 = data;
    return epoll_ctl(epfd, op, fd, &event);
}

int cherald_epoll_wait(int epfd, cherald_epoll_event *events, int max_events, int timeout_ms) {
    struct epoll_event raw[256];
    if (max_events > 256) max_events = 256;
    int count;
    do {
        count = epoll_wait(epfd, raw, max_events, timeout_ms);
    } while (count < 0 && errno == EINTR);
    for (int i = 0; i < count; i++) {
        events[i].events = raw[i].events;
        events[i].data = raw[i].data.u64;
    }
    return count;
}

int cherald_eventfd_create(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

int cherald_eventfd_signal(int fd) {
    uint64_t one = 1;
    ssize_t written;
    do {
        written = write(fd, &one, sizeof(one));
    } while (written < 0 && errno == EINTR);
    return written == sizeof(one) ? 0 : -1;
}

int cherald_eventfd_drain(int fd) {
    uint64_t value;
    ssize_t count;
    do {
        count = read(fd, &value, sizeof(value));
    } while (count < 0 && errno == EINTR);
    return count == sizeof(value) ? 0 : -1;
}

int cherald_socket_stream(int family) { return socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0); }

int cherald_accept(int fd, struct sockaddr_storage *address, socklen_t *length) {
    int result;
    do {
        result = accept4(fd, (struct sockaddr *)address, length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    } while (result < 0 && errno == EINTR);
    return result;
}

int cherald_set_nodelay(int fd) {
    int one = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int cherald_set_reuseaddr(int fd) {
    int one = 1;
    return setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
}

int cherald_set_v6only(int fd, int value) {
    return setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &value, sizeof(value));
}

int cherald_socket_error(int fd) {
    int error = 0;
    socklen_t length = sizeof(error);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) return -1;
    return error;
}

long cherald_send(int fd, const void *buffer, size_t length) {
    ssize_t sent;
    do {
        sent = send(fd, buffer, length, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    return (long)sent;
}

int cherald_local_port(int fd) {
    struct sockaddr_storage address;
    socklen_t length = sizeof(address);
    if (getsockname(fd, (struct sockaddr *)&address, &length) != 0) return -1;
    if (address.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&address)->sin_port);
    if (address.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&address)->sin6_port);
    return -1;
}

int cherald_address_to_string(const struct sockaddr *address, char *out, size_t out_length) {
    if (address->sa_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)address;
        if (inet_ntop(AF_INET, &v4->sin_addr, out, (socklen_t)out_length) == NULL) return -1;
        return ntohs(v4->sin_port);
    }
    if (address->sa_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)address;
        if (inet_ntop(AF_INET6, &v6->sin6_addr, out, (socklen_t)out_length) == NULL) return -1;
        return ntohs(v6->sin6_port);
    }
    return -1;
}

int cherald_block_sigpipe_in_thread(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    return pthread_sigmask(SIG_BLOCK, &set, NULL);
}

uint64_t cherald_monotonic_nanoseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

int cherald_getrandom(void *buffer, size_t length) {
    unsigned char *out = buffer;
    while (length > 0) {
        ssize_t got = getrandom(out, length, 0);
        if (got < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        out += got;
        length -= (size_t)got;
    }
    return 0;
}

int cherald_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int cherald_spawn_addchdir(posix_spawn_file_actions_t *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}

int cherald_spawn_addclosefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}
