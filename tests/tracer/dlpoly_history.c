/* DL_POLY's HISTORY pattern, for tests/test_tracer.py. Before its fix, every rank opened,
 * touched (fstat, seek to the end) and closed the trajectory file HISTORY at every step although
 * only rank 0 wrote the frame; after it (--fixed) only the writer opens the file.
 * Usage: mpirun -n N dlpoly_history DIR STEPS [--fixed] */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 3) MPI_Abort(MPI_COMM_WORLD, 2);
    int steps = atoi(argv[2]), fixed = argc > 3 && strcmp(argv[3], "--fixed") == 0;
    char path[4096], frame[4096];
    snprintf(path, sizeof path, "%s/HISTORY", argv[1]);
    for (int step = 0; step < steps; step++) {
        MPI_Barrier(MPI_COMM_WORLD);  /* the frame is ready on rank 0 */
        if (fixed && rank != 0) continue;
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd < 0) MPI_Abort(MPI_COMM_WORLD, 3);
        struct stat st;
        fstat(fd, &st);
        lseek(fd, 0, SEEK_END);
        if (rank == 0) {
            int n = snprintf(frame, sizeof frame, "timestep %d natoms 1000\n", step);
            memset(frame + n, ' ', sizeof frame - n - 1);
            frame[sizeof frame - 1] = '\n';
            if (write(fd, frame, sizeof frame) != (ssize_t)sizeof frame) MPI_Abort(MPI_COMM_WORLD, 4);
        }
        close(fd);
    }
    MPI_Finalize();
    return 0;
}
