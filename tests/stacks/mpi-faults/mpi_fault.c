/*
 * mpi_fault: one rank of a busy MPI job dies by SIGKILL; the launcher must end the job with an
 * error (tests/stacks/mpi-faults/run judges how fast).
 *
 *   mpi_fault tag|rma ITERATIONS_BEFORE_KILL
 *
 * tag: a ring of MPI_Sendrecv, 64 KiB each way (pml ucx / ch4:ucx, rendezvous at that size on
 *      both transports), so every rank is inside a transfer with the victim when it dies.
 * rma: every rank MPI_Put's 8 KiB into the next rank's window and MPI_Win_flush'es, in a
 *      passive-target epoch (MPI_Win_lock_all): osc ucx / ch4:ucx RMA over the transport.
 * Rank 1 prints "KILL <CLOCK_REALTIME ns>" and raises SIGKILL after ITERATIONS_BEFORE_KILL
 * iterations.  The others loop for at most 120 s and then print "SURVIVED" and exit 0: a job
 * that never notices the death ends by itself, and the driver calls that a failure.
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    TAG_BYTES = 65536,
    RMA_BYTES = 8192
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void maybe_die(int rank, long iter, long kill_at)
{
    if (rank == 1 && iter == kill_at) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        printf("KILL %lld%09ld\n", (long long)ts.tv_sec, ts.tv_nsec);
        fflush(stdout);
        raise(SIGKILL);
    }
}

int main(int argc, char **argv)
{
    int rank, size;
    if (argc != 3 || (strcmp(argv[1], "tag") && strcmp(argv[1], "rma"))) {
        fprintf(stderr, "usage: mpi_fault tag|rma ITERATIONS_BEFORE_KILL\n");
        return 2;
    }
    const int rma      = !strcmp(argv[1], "rma");
    const long kill_at = atol(argv[2]);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 3) {
        if (rank == 0)
            fprintf(stderr, "mpi_fault: needs at least 3 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    const size_t bytes = rma ? RMA_BYTES : TAG_BYTES;
    char *out = malloc(bytes), *in = malloc(bytes), *base;
    MPI_Win win;
    memset(out, rank, bytes);
    if (rma) {
        MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        MPI_Win_lock_all(0, win);
    }
    const double deadline = now_s() + 120;
    long iter;
    for (iter = 0; now_s() < deadline; ++iter) {
        maybe_die(rank, iter, kill_at);
        if (rma) {
            MPI_Put(out, (int)bytes, MPI_BYTE, next, 0, (int)bytes, MPI_BYTE, win);
            MPI_Win_flush(next, win);
        } else {
            MPI_Sendrecv(out, (int)bytes, MPI_BYTE, next, 0, in, (int)bytes, MPI_BYTE, prev, 0,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    printf("SURVIVED rank %d after %ld iterations\n", rank, iter);
    if (rma) {
        MPI_Win_unlock_all(win);
        MPI_Win_free(&win);
    }
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
