// The glibc extensions ProcessTestSupport needs, which Swift's Glibc module does not declare
// (it is built without _GNU_SOURCE).
#ifndef C_PROCESS_SPAWN_H
#define C_PROCESS_SPAWN_H

#include <spawn.h>

/// `pipe2(fds, O_CLOEXEC)`: both ends close on exec, so no other child inherits them.
int cprocess_pipe_cloexec(int fds[2]);

/// `posix_spawn_file_actions_addchdir_np`: the child changes to `path` before exec.
int cprocess_spawn_addchdir(posix_spawn_file_actions_t *actions, const char *path);

/// `posix_spawn_file_actions_addclosefrom_np`: the child closes every descriptor from `from` up.
int cprocess_spawn_addclosefrom(posix_spawn_file_actions_t *actions, int from);

#endif
