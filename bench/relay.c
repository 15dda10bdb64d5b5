/* The floor for any process standing between an editor and a language server: bench/proxy.py
 * runs the server behind this relay as a third path. It starts argv[1..] and copies bytes both
 * ways (stdin -> server, server -> stdout) with poll(2), as they arrive, parsing nothing: what
 * it adds is the two extra pipe hops and wake-ups alone. */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static int copy(int from, int to) {
    char buf[65536];
    ssize_t n = read(from, buf, sizeof buf);
    if (n <= 0) return -1;
    for (ssize_t off = 0; off < n;) {
        ssize_t w = write(to, buf + off, (size_t)(n - off));
        if (w <= 0) return -1;
        off += w;
    }
    return 0;
}

int main(int argc, char **argv) {
    int in[2], out[2];
    if (argc < 2 || pipe(in) || pipe(out)) return 2;
    pid_t child = fork();
    if (child == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execvp(argv[1], argv + 1);
        perror(argv[1]);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    struct pollfd fds[2] = {{0, POLLIN, 0}, {out[0], POLLIN, 0}};
    for (;;) {
        if (poll(fds, 2, -1) < 0) break;
        if (fds[0].revents && copy(0, in[1])) break;
        if (fds[1].revents && copy(out[0], 1)) break;
    }
    close(in[1]);
    kill(child, SIGTERM);
    waitpid(child, NULL, 0);
    return 0;
}
