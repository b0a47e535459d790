// Defined here rather than inline in the header: these need _GNU_SOURCE before the first include.
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

#include "CProcessSpawn.h"

int cprocess_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int cprocess_spawn_addchdir(posix_spawn_file_actions_t *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}

int cprocess_spawn_addclosefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}
