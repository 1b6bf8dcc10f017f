#ifndef CSHIMS_H
#define CSHIMS_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <spawn.h>

/* Credentials of the peer of a connected Unix socket (SO_PEERCRED).
   Returns 0 or -1 with errno set. */
int cshims_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid);

/* Supplementary groups of the peer (SO_PEERGROUPS, Linux 4.13).
   On success returns the number of groups (which may exceed capacity:
   then only capacity were stored); -1 with errno set on failure. */
int cshims_peer_groups(int fd, gid_t *groups, int capacity);

/* accept4(2) with SOCK_CLOEXEC | SOCK_NONBLOCK. */
int cshims_accept(int fd);

/* sendmsg(2) of len bytes with one descriptor attached (SCM_RIGHTS) when
   pass_fd >= 0. Returns bytes sent or -1 with errno set. */
ssize_t cshims_send_with_fd(int fd, const void *buf, size_t len, int pass_fd);

/* recvmsg(2) into buf; descriptors that arrive (SCM_RIGHTS) are stored in
   fds (up to capacity, with MSG_CMSG_CLOEXEC); the rest are closed.
   *nfds receives how many were stored. Returns bytes read, 0 on EOF, or -1
   with errno set. *truncated is set when the control data was cut short. */
ssize_t cshims_recv_with_fds(int fd, void *buf, size_t len, int *fds, int capacity, int *nfds, int *truncated);

/* Offset of the name in struct inotify_event, and its fixed size. */
size_t cshims_inotify_event_size(void);

/* Installs handlers for the given signals that write the signal number (one
   byte) into a close-on-exec, non-blocking pipe, whose read end is returned
   (or -1 with errno set). Handlers are process-wide, so a signal reaches the
   pipe whichever thread the kernel picks. Call once. */
int cshims_signal_pipe(const int *signals, int count);

/* Starts a detached pthread running fn(arg). Returns 0 or an errno value. */
int cshims_thread_start(void (*fn)(void *), void *arg, const char *name);

/* A route netlink socket (rtnetlink(7)), close-on-exec and non-blocking,
   bound to the multicast groups of links and IPv4 and IPv6 routes.
   Returns the descriptor or -1 with errno set. */
int cshims_route_monitor(void);

/* What one route netlink message says, for reconnecting: kind 1, a link
   (index, and running: IFF_UP and IFF_RUNNING both set); kind 2, a
   default route added to the main table; kind 3, another route added. */
struct cshims_route_event { int kind; int index; int running; };

/* Reads the messages in buf (len bytes, as one recv(2) returned them) with
   the kernel's NLMSG_* macros, storing up to capacity events for link
   messages and added routes; others are passed over. Returns how many
   were stored. */
int cshims_route_events(const void *buf, size_t len, struct cshims_route_event *events, int capacity);

/* eventfd(2) with EFD_CLOEXEC | EFD_NONBLOCK. */
int cshims_eventfd(void);

/* fcntl(2) F_SETPIPE_SZ (a Linux name, behind _GNU_SOURCE). */
int cshims_set_pipe_size(int fd, int size);

/* renameat2(2) with RENAME_NOREPLACE: fails with EEXIST rather than
   replace what is at newpath. Returns 0 or -1 with errno set. */
int cshims_renameat_noreplace(int olddirfd, const char *oldpath, int newdirfd, const char *newpath);
/* fstatfs(2)'s f_type, the file system's magic number (<sys/vfs.h>,
   which Glibc's Swift module leaves out). Returns 0 or -1 with errno set. */
int cshims_fstatfs_type(int fd, uint32_t *type);

/* O_PATH, which needs _GNU_SOURCE. */
int cshims_o_path(void);

/* posix_spawn_file_actions_addclosefrom_np(3) (glibc 2.34, _GNU_SOURCE):
   the child closes every descriptor >= from, after the earlier actions.
   Returns 0 or an errno value. */
int cshims_spawn_addclosefrom(posix_spawn_file_actions_t *actions, int from);

/* pidfd_open(2) (Linux 5.3, glibc 2.36): a close-on-exec descriptor for
   the child pid that poll(2) reports readable once it has exited.
   Returns it, or -1 with errno set. */
int cshims_pidfd_open(pid_t pid);

/* Decodes a wait(2) status with glibc's own macros: *exit_status is
   WEXITSTATUS when WIFEXITED, else -1; *signal is WTERMSIG when
   WIFSIGNALED, else -1. */
void cshims_wait_status(int status, int *exit_status, int *signal);

/* The process's environment (environ(7)), which <unistd.h> declares only
   under _GNU_SOURCE. */
char **cshims_environ(void);
#endif
