/* server_proc.c — a server process the harness starts for `compare --mode server` (our
 * `edge0-infer serve --port 0`, or any server that prints "listening on http://HOST:PORT" on
 * stderr): started in its own process group with stderr to a log file, its URL read from that
 * log, its peak RSS read from /proc before it is stopped (SIGTERM, then SIGKILL after a grace). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

/* The last line of the log, for an error message. */
static void last_line(const char *path, char *buf, size_t cap) {
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
        if (strspn(line, " \t\r\n") != strlen(line)) {
            line[strcspn(line, "\r\n")] = 0;
            snprintf(buf, cap, "%s", line);
        }
    if (f) fclose(f);
}

/* "listening on http://HOST:PORT" in the log: 1 and the URL. */
static int find_url(const char *path, char *url, size_t cap) {
    FILE *f = fopen(path, "r");
    char line[1024];
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "listening on http://");
        if (!p) continue;
        p += strlen("listening on ");
        size_t n = strcspn(p, " \t\r\n,;");
        while (n && p[n - 1] == '/') n--; /* without a trailing slash */
        if (n > 0 && n < cap) {
            memcpy(url, p, n);
            url[n] = 0;
            found = 1;
        }
    }
    if (f) fclose(f);
    return found;
}

int server_start(char *const *argv, const char *log_path, double timeout_s, server_proc *sp, e0_err *e) {
    memset(sp, 0, sizeof *sp);
    sp->pid = -1;
    snprintf(sp->log, sizeof sp->log, "%s", log_path);
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return e0_fail(e, "%s: %s", log_path, strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(fd);
        return e0_fail(e, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        setpgid(0, 0);
        int nul = open("/dev/null", O_RDWR);
        if (nul >= 0) dup2(nul, 0), dup2(nul, 1);
        dup2(fd, 2);
        execvp(argv[0], argv);
        fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fd);
    sp->pid = pid;
    for (double waited = 0; waited < timeout_s; waited += 0.05) {
        if (find_url(log_path, sp->url, sizeof sp->url)) return 0;
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            sp->pid = -1;
            char ll[300];
            last_line(log_path, ll, sizeof ll);
            return e0_fail(e, "%s exited before listening (%s %d: %s)", argv[0], WIFEXITED(status) ? "exit status" : "signal",
                           WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), *ll ? ll : "no output");
        }
        if (proc_interrupted()) break;
        usleep(50000);
    }
    server_stop(sp, 2);
    char ll[300];
    last_line(log_path, ll, sizeof ll);
    return e0_fail(e, "%s did not print 'listening on http://...' within %g s (%s)", argv[0], timeout_s, *ll ? ll : "no output");
}

long long server_peak_rss(const server_proc *sp) {
    if (sp->pid <= 0) return -1;
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", sp->pid);
    FILE *f = fopen(path, "r");
    long long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) kb = strtoll(line + 6, NULL, 10);
    if (f) fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

void server_stop(server_proc *sp, double grace_s) {
    if (sp->pid <= 0) return;
    kill(-sp->pid, SIGTERM);
    kill(sp->pid, SIGTERM);
    int status;
    for (double w = 0; w < grace_s; w += 0.05) {
        if (waitpid(sp->pid, &status, WNOHANG) == sp->pid) {
            sp->pid = -1;
            return;
        }
        usleep(50000);
    }
    kill(-sp->pid, SIGKILL);
    kill(sp->pid, SIGKILL);
    waitpid(sp->pid, &status, 0);
    sp->pid = -1;
}
