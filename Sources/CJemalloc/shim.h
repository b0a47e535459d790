#ifndef CJEMALLOC_SHIM_H
#define CJEMALLOC_SHIM_H
/* jemalloc replaces the C library's malloc and free for the whole `herald` process: linking the
   executable against it (through Sources/HeraldAllocator, its Swift wrapper) is enough. Swift only
   asks it for its version and statistics, through these functions. */
#include <stddef.h>
#include <stdint.h>
#include <jemalloc/jemalloc.h>

/* Refreshes jemalloc's statistics and reads two, in bytes: what the process has allocated and
   not freed, and what the allocator keeps resident (its metadata and cached free pages
   included). 0 on success, -1 when mallctl refuses (a build without statistics). */
static inline int herald_jemalloc_statistics(size_t *allocated, size_t *resident) {
    uint64_t epoch = 1;
    size_t length = sizeof(epoch);
    if (mallctl("epoch", &epoch, &length, &epoch, length) != 0) return -1;
    length = sizeof(*allocated);
    if (mallctl("stats.allocated", allocated, &length, NULL, 0) != 0) return -1;
    length = sizeof(*resident);
    if (mallctl("stats.resident", resident, &length, NULL, 0) != 0) return -1;
    return 0;
}

/* jemalloc's version string ("5.3.0-0-g…"), or NULL when mallctl refuses. */
static inline const char *herald_jemalloc_version(void) {
    const char *version = NULL;
    size_t length = sizeof(version);
    return mallctl("version", (void *)&version, &length, NULL, 0) == 0 ? version : NULL;
}
#endif
