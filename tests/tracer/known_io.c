/* Known I/O for tests/test_tracer.py: every call below is counted by hand in the test's
 * expected counters, so the profiler's log must match them exactly.
 * Usage: known_io DIR EXIT_CODE (runs in DIR, exits with EXIT_CODE). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static char buf[8192] __attribute__((aligned(64)));
static int shared_fd;

static void *thread_writes(void *arg) {
    long t = (long)arg;
    for (int i = 0; i < 1000; i++) pwrite(shared_fd, buf, 64, t * 64000 + i * 64);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3 || chdir(argv[1]) != 0) return 100;
    memset(buf, 'x', sizeof buf);
    struct stat st;

    /* 1. POSIX writes to a.dat (relative path) */
    int fd = open("a.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    write(fd, buf, 50);                 /* offset 0 */
    write(fd, buf, 50);                 /* 50: sequential, consecutive */
    write(fd, buf + 1, 50);             /* 100: sequential, consecutive, buffer not aligned */
    pwrite(fd, buf, 2000, 4096);        /* 4096: sequential */
    lseek(fd, 0, SEEK_SET);
    write(fd, buf, 10);                 /* 0 */
    struct iovec iov[2] = {{buf, 100}, {buf, 200}};
    writev(fd, iov, 2);                 /* 10: sequential, consecutive, 300 bytes */
    fsync(fd);
    fdatasync(fd);
    fstat(fd, &st);
    close(fd);

    /* 2. POSIX reads of a.dat (absolute path) */
    char path[4096];
    snprintf(path, sizeof path, "%s/a.dat", argv[1]);
    fd = open(path, O_RDONLY);
    read(fd, buf, 100);                 /* 0 */
    read(fd, buf, 100);                 /* 100: sequential, consecutive */
    pread(fd, buf, 4000, 2048);         /* 2048: sequential */
    struct iovec riov[2] = {{buf, 50}, {buf + 64, 50}};
    readv(fd, riov, 2);                 /* 200, 100 bytes */
    lseek(fd, 0, SEEK_END);
    read(fd, buf, 10);                  /* 6096: end of file, 0 bytes, sequential */
    void *m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m != MAP_FAILED) munmap(m, 4096);
    close(fd);

    /* 3. metadata */
    stat("a.dat", &st);
    lstat(path, &st);
    access("a.dat", R_OK);
    struct statx stx;
    statx(AT_FDCWD, "a.dat", 0, STATX_SIZE, &stx);
    stat("does-not-exist", &st);        /* failed: counted per process only */
    open("does-not-exist", O_RDONLY);   /* failed */
    int dfd = open(".", O_RDONLY | O_DIRECTORY);
    fd = openat(dfd, "a.dat", O_RDONLY);
    int fd2 = dup(fd);
    read(fd2, buf, 10);                 /* 0 */
    close(fd2);
    close(fd);
    close(dfd);
    close(creat("e.dat", 0644));

    /* 4. STDIO: b.txt has no POSIX record (glibc's own read/write calls are not counted twice) */
    FILE *fp = fopen("b.txt", "w");
    fwrite(buf, 1, 1000, fp);
    fprintf(fp, "%d\n", 12345);         /* 6 bytes */
    fputs("hello\n", fp);               /* 6 bytes */
    fputc('x', fp);
    fseek(fp, 0, SEEK_SET);
    fwrite(buf, 10, 5, fp);             /* 50 bytes at 0 */
    fflush(fp);
    fclose(fp);
    fp = fopen("b.txt", "r");
    fread(buf, 1, 2000, fp);            /* 1013 bytes */
    fgets(buf, 100, fp);                /* end of file: nothing read, not counted */
    fclose(fp);

    /* 5. a forked child writes its own file and its own log */
    pid_t pid = fork();
    if (pid == 0) {
        int c = open("c_child.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
        write(c, buf, 123);
        close(c);
        exit(0);
    }
    waitpid(pid, NULL, 0);

    /* 6. four threads, 1000 pwrites of 64 bytes each, to one file */
    shared_fd = open("d.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    pthread_t th[4];
    for (long t = 0; t < 4; t++) pthread_create(&th[t], NULL, thread_writes, (void *)t);
    for (int t = 0; t < 4; t++) pthread_join(th[t], NULL);
    close(shared_fd);
    return atoi(argv[2]);
}
