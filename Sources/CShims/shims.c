#define _GNU_SOURCE
#include "cshims.h"
#include <errno.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

int cshims_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid) {
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) return -1;
    *pid = cred.pid;
    *uid = cred.uid;
    *gid = cred.gid;
    return 0;
}

int cshims_peer_groups(int fd, gid_t *groups, int capacity) {
    socklen_t len = (socklen_t)(sizeof(gid_t) * (size_t)capacity);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
        if (errno == ERANGE) return (int)(len / sizeof(gid_t));
        return -1;
    }
    return (int)(len / sizeof(gid_t));
}

int cshims_accept(int fd) {
    return accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
}

ssize_t cshims_send_with_fd(int fd, const void *buf, size_t len, int pass_fd) {
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
    struct msghdr msg;
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (pass_fd >= 0) {
        memset(&control, 0, sizeof(control));
        msg.msg_control = control.buf;
        msg.msg_controllen = sizeof(control.buf);
        struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
        cmsg->cmsg_level = SOL_SOCKET;
        cmsg->cmsg_type = SCM_RIGHTS;
        cmsg->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cmsg), &pass_fd, sizeof(int));
    }
    return sendmsg(fd, &msg, MSG_NOSIGNAL);
}

ssize_t cshims_recv_with_fds(int fd, void *buf, size_t len, int *fds, int capacity, int *nfds, int *truncated) {
    struct iovec iov = { .iov_base = buf, .iov_len = len };
    struct msghdr msg;
    union {
        char buf[CMSG_SPACE(sizeof(int) * 16)];
        struct cmsghdr align;
    } control;
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.buf;
    msg.msg_controllen = sizeof(control.buf);
    *nfds = 0;
    *truncated = 0;
    ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0) return -1;
    if (msg.msg_flags & MSG_CTRUNC) *truncated = 1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; i++) {
            int received;
            memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (*nfds < capacity) {
                fds[(*nfds)++] = received;
            } else {
                close(received);
            }
        }
    }
    return n;
}

size_t cshims_inotify_event_size(void) {
    return sizeof(struct inotify_event);
}

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

static int signal_pipe_write = -1;

static void signal_pipe_handler(int signo) {
    int saved = errno;
    unsigned char byte = (unsigned char)signo;
    (void)!write(signal_pipe_write, &byte, 1);
    errno = saved;
}

int cshims_signal_pipe(const int *signals, int count) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0) return -1;
    signal_pipe_write = fds[1];
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = signal_pipe_handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < count; i++) {
        if (sigaction(signals[i], &sa, NULL) < 0) return -1;
    }
    return fds[0];
}

struct thread_start {
    void (*fn)(void *);
    void *arg;
    char name[16];
};

static void *thread_trampoline(void *p) {
    struct thread_start start = *(struct thread_start *)p;
    free(p);
    if (start.name[0] != 0) pthread_setname_np(pthread_self(), start.name);
    start.fn(start.arg);
    return NULL;
}

int cshims_thread_start(void (*fn)(void *), void *arg, const char *name) {
    struct thread_start *start = malloc(sizeof(*start));
    if (start == NULL) return ENOMEM;
    start->fn = fn;
    start->arg = arg;
    memset(start->name, 0, sizeof(start->name));
    if (name != NULL) strncpy(start->name, name, sizeof(start->name) - 1);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    int rc = pthread_create(&thread, &attr, thread_trampoline, start);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        free(start);
        return rc;
    }
    return 0;
}

#include <sys/eventfd.h>

int cshims_eventfd(void) {
    return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

#include <stdio.h>

int cshims_renameat_noreplace(int olddirfd, const char *oldpath, int newdirfd, const char *newpath) {
    return renameat2(olddirfd, oldpath, newdirfd, newpath, RENAME_NOREPLACE);
}

#include <sys/vfs.h>

int cshims_fstatfs_type(int fd, uint32_t *type) {
    struct statfs st;
    if (fstatfs(fd, &st) < 0) return -1;
    /* f_type is a signed word; every magic number fits 32 bits. */
    *type = (uint32_t)st.f_type;
    return 0;
}

int cshims_o_path(void) {
    return O_PATH;
}

#include <spawn.h>
#include <sys/pidfd.h>
#include <sys/wait.h>

int cshims_spawn_addclosefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

int cshims_pidfd_open(pid_t pid) {
    return pidfd_open(pid, 0);
}

void cshims_wait_status(int status, int *exit_status, int *signal) {
    *exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    *signal = WIFSIGNALED(status) ? WTERMSIG(status) : -1;
}

char **cshims_environ(void) {
    return environ;
}

int cshims_set_pipe_size(int fd, int size) {
    return fcntl(fd, F_SETPIPE_SZ, size);
}

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>

int cshims_route_monitor(void) {
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
    if (fd < 0) return -1;
    struct sockaddr_nl address = { .nl_family = AF_NETLINK, .nl_groups = RTMGRP_LINK | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE };
    if (bind(fd, (struct sockaddr *)&address, sizeof address) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int cshims_route_events(const void *buf, size_t len, struct cshims_route_event *events, int capacity) {
    int count = 0;
    int remaining = (int)len;
    for (const struct nlmsghdr *h = buf; count < capacity && NLMSG_OK(h, remaining); h = NLMSG_NEXT(h, remaining)) {
        if (h->nlmsg_type == RTM_NEWLINK && h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct ifinfomsg))) {
            const struct ifinfomsg *link = NLMSG_DATA(h);
            unsigned up = IFF_UP | IFF_RUNNING;
            events[count++] = (struct cshims_route_event){ 1, link->ifi_index, (link->ifi_flags & up) == up };
        } else if (h->nlmsg_type == RTM_DELLINK && h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct ifinfomsg))) {
            const struct ifinfomsg *link = NLMSG_DATA(h);
            events[count++] = (struct cshims_route_event){ 1, link->ifi_index, 0 };
        } else if (h->nlmsg_type == RTM_NEWROUTE && h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct rtmsg))) {
            const struct rtmsg *route = NLMSG_DATA(h);
            int isDefault = route->rtm_dst_len == 0 && route->rtm_table == RT_TABLE_MAIN && route->rtm_type == RTN_UNICAST;
            events[count++] = (struct cshims_route_event){ isDefault ? 2 : 3, 0, 0 };
        }
    }
    return count;
}
