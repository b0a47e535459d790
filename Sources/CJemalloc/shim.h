#ifndef CJEMALLOC_SHIM_H
#define CJEMALLOC_SHIM_H
/* jemalloc replaces the C library's malloc and free for the whole `herald` process: linking the
   executable against it is enough (Sources/herald/Allocator.swift). Swift only asks it for its
   version, through this function. */
#include <stddef.h>
#include <jemalloc/jemalloc.h>

/* jemalloc's version string ("5.3.0-0-g…"), or NULL when mallctl refuses. */
static inline const char *herald_jemalloc_version(void) {
    const char *version = NULL;
    size_t length = sizeof(version);
    return mallctl("version", (void *)&version, &length, NULL, 0) == 0 ? version : NULL;
}
#endif
