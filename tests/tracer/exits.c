/* Programs that end badly, for tests/test_tracer.py: each writes 10 bytes to FILE, then
 *   abort    dies of SIGABRT
 *   segv     dies of SIGSEGV
 *   fork     forks a child that writes 5 more bytes and _exit(3)s; exits with the child's status + 1
 * Usage: exits MODE FILE */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    int fd = open(argv[2], O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "0123456789", 10) != 10) return 2;
    if (strcmp(argv[1], "abort") == 0) abort();
    if (strcmp(argv[1], "segv") == 0) *(volatile int *)0 = 1;
    if (strcmp(argv[1], "fork") == 0) {
        pid_t pid = fork();
        if (pid == 0) {
            write(fd, "child", 5);
            _exit(3);
        }
        int status;
        waitpid(pid, &status, 0);
        return WEXITSTATUS(status) + 1;
    }
    return 2;
}
