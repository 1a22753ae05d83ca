#ifndef CTOKENPIN_SHIMS_H
#define CTOKENPIN_SHIMS_H

#include <sys/types.h>

/// Reads the peer's credentials of a connected Unix socket (SO_PEERCRED).
/// Returns 0 on success, -1 with errno set on failure.
int tokenpin_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid);

/// Marks the process not dumpable (prctl PR_SET_DUMPABLE 0) and sets RLIMIT_CORE to 0.
/// Returns 0 on success, -1 with errno set on failure.
int tokenpin_disable_core_dumps(void);

#endif
