#ifndef CTOKENPIN_SHIMS_H
#define CTOKENPIN_SHIMS_H

#include <spawn.h>
#include <sys/types.h>

/// Reads the peer's credentials of a connected Unix socket (SO_PEERCRED).
/// Returns 0 on success, -1 with errno set on failure.
int tokenpin_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid);

/// Marks the process not dumpable (prctl PR_SET_DUMPABLE 0) and sets RLIMIT_CORE to 0.
/// Returns 0 on success, -1 with errno set on failure.
int tokenpin_disable_core_dumps(void);

/// Makes a pipe whose two ends are close-on-exec (pipe2 O_CLOEXEC).
/// Returns 0 on success, -1 with errno set on failure.
int tokenpin_pipe_cloexec(int fds[2]);

/// Adds "close every descriptor from `lowest` up" to spawn file actions (posix_spawn_file_actions_addclosefrom_np).
/// Returns 0 on success, an error number on failure.
int tokenpin_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest);

/// Asks the kernel to send `signal` to this process when its parent ends (prctl PR_SET_PDEATHSIG).
/// Returns 0 on success, -1 with errno set on failure.
int tokenpin_parent_death_signal(int signal);

#endif
