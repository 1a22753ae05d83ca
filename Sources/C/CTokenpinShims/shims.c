#define _GNU_SOURCE
#include "CTokenpinShims.h"

#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>

int tokenpin_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid) {
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
        return -1;
    }
    *pid = cred.pid;
    *uid = cred.uid;
    *gid = cred.gid;
    return 0;
}

int tokenpin_disable_core_dumps(void) {
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) != 0) {
        return -1;
    }
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

int tokenpin_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

int tokenpin_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest) {
    return posix_spawn_file_actions_addclosefrom_np(actions, lowest);
}

int tokenpin_parent_death_signal(int signal) {
    return prctl(PR_SET_PDEATHSIG, (unsigned long) signal, 0, 0, 0);
}
