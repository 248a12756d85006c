/* proc.c — running one measured process: fork/exec with stdout and stderr captured through
 * pipes, a timeout that kills the child's whole process group, SIGINT/SIGTERM turning into a
 * clean stop, and finding the JSON row in what the process printed. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "measure/sysinfo.h"

#define OUT_MAX ((size_t)64 << 20) /* stdout beyond this is dropped (a row is a few KiB) */
#define ERR_KEEP ((size_t)256 << 10) /* the last this-many bytes of stderr are kept */

static volatile sig_atomic_t g_interrupted;

static void on_signal(int sig) {
    (void)sig;
    g_interrupted = 1;
}

void proc_install_signal_handlers(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int proc_interrupted(void) { return g_interrupted != 0; }

void proc_sleep(double s) {
    double end = e0_now() + s;
    while (!g_interrupted) {
        double left = end - e0_now();
        if (left <= 0) break;
        if (left > 0.2) left = 0.2;
        struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

typedef struct buf {
    char *p;
    size_t len, cap, max;
    int keep_tail;
} buf;

static void buf_append(buf *b, const char *data, size_t n) {
    if (b->keep_tail && b->len + n > b->max) {
        /* Keep the tail: drop the oldest bytes. */
        if (n >= b->max) {
            data += n - b->max;
            n = b->max;
            b->len = 0;
        } else {
            size_t drop = b->len + n - b->max;
            memmove(b->p, b->p + drop, b->len - drop);
            b->len -= drop;
        }
    } else if (b->len + n > b->max) {
        n = b->max - b->len;
    }
    if (b->len + n + 1 > b->cap) {
        size_t ncap = b->cap ? b->cap : 4096;
        while (ncap < b->len + n + 1) ncap *= 2;
        char *np = realloc(b->p, ncap);
        if (!np) return; /* out of memory: keep what we have */
        b->p = np;
        b->cap = ncap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = 0;
}

static char *buf_take(buf *b, size_t *len) {
    if (!b->p) {
        b->p = calloc(1, 1);
        b->len = 0;
    }
    *len = b->len;
    return b->p;
}

void proc_run(char *const *argv, double timeout_s, proc_result *r) {
    memset(r, 0, sizeof *r);
    int out_pipe[2], err_pipe[2], exec_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0) {
        snprintf(r->error, sizeof r->error, "pipe: %s", strerror(errno));
        return;
    }
    if (pipe2(err_pipe, O_CLOEXEC) != 0) {
        close(out_pipe[0]), close(out_pipe[1]);
        snprintf(r->error, sizeof r->error, "pipe: %s", strerror(errno));
        return;
    }
    if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
        close(out_pipe[0]), close(out_pipe[1]), close(err_pipe[0]), close(err_pipe[1]);
        snprintf(r->error, sizeof r->error, "pipe: %s", strerror(errno));
        return;
    }
    fflush(NULL);
    double t0 = e0_now();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(r->error, sizeof r->error, "fork: %s", strerror(errno));
        close(out_pipe[0]), close(out_pipe[1]), close(err_pipe[0]), close(err_pipe[1]);
        close(exec_pipe[0]), close(exec_pipe[1]);
        return;
    }
    if (pid == 0) {
        /* Own process group so a timeout can stop the child and anything it started. */
        setpgid(0, 0);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, 0);
        dup2(out_pipe[1], 1);
        dup2(err_pipe[1], 2);
        execvp(argv[0], argv);
        int err = errno;
        ssize_t w = write(exec_pipe[1], &err, sizeof err);
        (void)w;
        _exit(127);
    }
    setpgid(pid, pid); /* also from the parent, so the group exists before any kill */
    close(out_pipe[1]);
    close(err_pipe[1]);
    close(exec_pipe[1]);
    int exec_errno = 0;
    ssize_t got;
    do got = read(exec_pipe[0], &exec_errno, sizeof exec_errno);
    while (got < 0 && errno == EINTR);
    close(exec_pipe[0]);

    buf out = {.max = OUT_MAX}, err = {.max = ERR_KEEP, .keep_tail = 1};
    struct pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    int open_fds = 2, killed = 0;
    char chunk[65536];
    while (open_fds > 0) {
        if (!killed && (g_interrupted || (timeout_s > 0 && e0_now() - t0 > timeout_s))) {
            if (g_interrupted) r->interrupted = 1;
            else r->timed_out = 1;
            kill(-pid, SIGKILL);
            killed = 1;
        }
        int pr = poll(fds, 2, 200);
        if (pr < 0 && errno != EINTR) break;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t n = read(fds[i].fd, chunk, sizeof chunk);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
                continue;
            }
            buf_append(i == 0 ? &out : &err, chunk, (size_t)n);
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0) close(fds[i].fd);
    int status = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid || (w < 0 && errno != EINTR)) break;
        if (!killed && (g_interrupted || (timeout_s > 0 && e0_now() - t0 > timeout_s))) {
            if (g_interrupted) r->interrupted = 1;
            else r->timed_out = 1;
            kill(-pid, SIGKILL);
            killed = 1;
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    r->wall_seconds = e0_now() - t0;
    r->out = buf_take(&out, &r->out_len);
    r->err = buf_take(&err, &r->err_len);
    if (exec_errno) {
        snprintf(r->error, sizeof r->error, "cannot run %s: %s", argv[0], strerror(exec_errno));
        return;
    }
    r->started = 1;
    if (WIFEXITED(status)) {
        r->exited = 1;
        r->exit_status = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        r->signal = WTERMSIG(status);
    }
}

void proc_result_free(proc_result *r) {
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

json_t *proc_last_json_row(const char *text) {
    json_t *last = NULL;
    const char *line = text;
    while (line && *line) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        if (len > 1 && line[0] == '{') {
            json_error_t je;
            json_t *j = json_loadb(line, len, 0, &je);
            if (j && json_is_object(j)) {
                json_decref(last);
                last = j;
            } else {
                json_decref(j);
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    return last;
}

/* The engine's own error line ("edge0-infer: ...", the last one) if there is one, else the last
 * non-empty line of text, into buf. A usage text printed after the error does not hide it. */
static void last_line(const char *text, char *buf, size_t cap) {
    buf[0] = 0;
    if (!text) return;
    const char *err = NULL;
    for (const char *p = strstr(text, "edge0-infer: "); p; p = strstr(p + 1, "edge0-infer: "))
        if (p == text || p[-1] == '\n') err = p;
    if (err) {
        size_t len = strcspn(err, "\n");
        if (len > cap - 1) len = cap - 1;
        memcpy(buf, err, len);
        buf[len] = 0;
        return;
    }
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' ')) n--;
    size_t start = n;
    while (start > 0 && text[start - 1] != '\n') start--;
    size_t len = n - start < cap - 1 ? n - start : cap - 1;
    memcpy(buf, text + start, len);
    buf[len] = 0;
}

void proc_describe_failure(const proc_result *r, char *buf, size_t cap) {
    char tail[200];
    last_line(r->err, tail, sizeof tail);
    if (!r->started) snprintf(buf, cap, "%s", r->error);
    else if (r->interrupted) snprintf(buf, cap, "interrupted by the user");
    else if (r->timed_out) snprintf(buf, cap, "timed out after %.0f s", r->wall_seconds);
    else if (!r->exited) snprintf(buf, cap, "killed by signal %d (%s)%s%s", r->signal, strsignal(r->signal),
                                  tail[0] ? ": " : "", tail);
    else if (r->exit_status != 0) snprintf(buf, cap, "exit status %d%s%s", r->exit_status, tail[0] ? ": " : "", tail);
    else snprintf(buf, cap, "exited 0 but printed no JSON row%s%s", tail[0] ? "; stderr: " : "", tail);
}
