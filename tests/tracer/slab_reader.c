/* Docker-HT's slab reader, for tests/test_tracer.py: N ranks share one line-oriented file; rank r
 * owns the records that start in bytes [size*r/N, size*(r+1)/N) and reads the file with a fixed
 * buffer of BUFSIZE bytes (pread from just before its slab until the end of its last record).
 * A buffer larger than the slab makes every rank read a whole buffer: read amplification.
 *
 * Usage: slab_reader FILE NRANKS BUFSIZE
 * The launcher forks and execs NRANKS copies of itself (8 at a time) with OMPI_COMM_WORLD_RANK
 * set, as mpirun would, so each rank is a real process with its own log. Each rank prints
 * "rank R records K"; the launcher exits non-zero if any rank failed. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int read_slab(const char *path, long rank, long nranks, size_t bufsize) {
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) return 1;
    off_t start = st.st_size * rank / nranks, end = st.st_size * (rank + 1) / nranks;
    char *buf = malloc(bufsize);
    if (!buf) return 1;
    long records = 0;
    off_t off = start > 0 ? start - 1 : 0;  /* the byte before the slab says if a record starts */
    int prev_newline = start == 0, done = start >= end;
    while (!done) {
        ssize_t n = pread(fd, buf, bufsize, off);
        if (n <= 0) break;
        for (ssize_t i = 0; i < n && !done; i++) {
            off_t pos = off + i;
            if (pos >= start && pos < end && prev_newline) records++;
            prev_newline = buf[i] == '\n';
            if (prev_newline && pos >= end - 1) done = 1;  /* the last record owned has ended */
        }
        off += n;
    }
    printf("rank %ld records %ld\n", rank, records);
    free(buf);
    close(fd);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 5 && strcmp(argv[1], "--rank") == 0)
        return read_slab(argv[2], atol(getenv("OMPI_COMM_WORLD_RANK")), atol(argv[3]), strtoul(argv[4], NULL, 10));
    if (argc != 4) {
        fprintf(stderr, "usage: slab_reader FILE NRANKS BUFSIZE\n");
        return 2;
    }
    long nranks = atol(argv[2]), running = 0, failed = 0;
    for (long r = 0; r < nranks; r++) {
        if (running == 8) {
            int status;
            wait(&status);
            failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
            running--;
        }
        if (fork() == 0) {
            char rank[32];
            snprintf(rank, sizeof rank, "%ld", r);
            setenv("OMPI_COMM_WORLD_RANK", rank, 1);
            execl("/proc/self/exe", argv[0], "--rank", argv[1], argv[2], argv[3], (char *)NULL);
            _exit(127);
        }
        running++;
    }
    for (int status; running > 0; running--) {
        wait(&status);
        failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    return failed ? 1 : 0;
}
