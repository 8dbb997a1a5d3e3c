/* Forks while other threads do I/O, for tests/test_tracer.py: three threads pwrite/pread one
 * file without pause while the main thread forks 50 children; child i writes 1 byte to its own
 * file and _exit(i % 7)s. A tracer that is not fork-safe deadlocks or loses children's logs.
 * Usage: threads_fork DIR (exits 5 when every child's status came back right). */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int stop;
static const char *dir;

static void *hammer(void *arg) {
    char buf[64] = {0}, path[4096];
    snprintf(path, sizeof path, "%s/shared.dat", dir);
    int fd = open(path, O_CREAT | O_RDWR, 0644);
    while (!stop) {
        pwrite(fd, buf, sizeof buf, 0);
        pread(fd, buf, sizeof buf, 0);
    }
    close(fd);
    return arg;
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    dir = argv[1];
    pthread_t threads[3];
    for (int t = 0; t < 3; t++) pthread_create(&threads[t], NULL, hammer, NULL);
    int bad = 0;
    for (int i = 0; i < 50; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            char path[4096];
            snprintf(path, sizeof path, "%s/child%d.dat", dir, i);
            int fd = open(path, O_CREAT | O_WRONLY, 0644);
            write(fd, "x", 1);
            close(fd);
            _exit(i % 7);
        }
        int status;
        waitpid(pid, &status, 0);
        bad += !WIFEXITED(status) || WEXITSTATUS(status) != i % 7;
    }
    stop = 1;
    for (int t = 0; t < 3; t++) pthread_join(threads[t], NULL);
    return bad ? 1 : 5;
}
