/*
 * mpi_cost sendrecv|put [ITERATIONS] [GAP_US]: the cost section's MPI rows, two ranks.
 *
 * sendrecv: ITERATIONS (default 200) round trips of 8 bytes (MPI_BYTE): rank 0 MPI_Send then
 *   MPI_Recv, rank 1 MPI_Recv then MPI_Send.  Before each MPI_Recv, rank 1 waits until rank 0's
 *   MPI_Send has returned (a counter in a POSIX shared memory page: the two ranks share a host)
 *   and then GAP_US (default 20000) microseconds more, so that the message has arrived and
 *   rank 1's MPI_Recv finds it at its first poll (no spin of progress, whose count depends on
 *   timing).  A plain sleep did not do: rank 0 under callgrind in the Soft-RoCE VM missed 20 ms
 *   on 42-48 % of the messages.
 * put: rank 0 opens a passive-target epoch on a window of rank 1 (MPI_Win_lock_all with
 *   MPI_MODE_NOCHECK: no lock traffic), then ITERATIONS times MPI_Put of 8 bytes to rank 1,
 *   sleeps GAP_US (the write's completion is then in the CQ when the flush polls), and
 *   MPI_Win_flush(1).  Rank 1 only takes part in the window's collectives.
 * The cost section runs the ranks under callgrind with the MPI calls collected, a dump before
 * each (sections/cost.py, PROGRAM rows).  The data is checked: every received message and the
 * window's last value.  Prints "mpi_cost MODE rank R ok" per rank.
 * Exit status: 0 when the data was right, 1 otherwise (MPI errors abort).
 */
#include <mpi.h>

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Rank 0's count of sends returned, in a page both ranks map (rank 0 names it) */
static volatile uint64_t *shared_sent(int rank)
{
    int pid = (int)getpid(), fd;
    char name[64];
    void *page;

    MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
    snprintf(name, sizeof(name), "/mpi_cost.%d", pid);
    if (rank == 0) {
        fd = shm_open(name, O_CREAT | O_RDWR | O_TRUNC, 0600);
        if ((fd < 0) || (ftruncate(fd, 4096) != 0)) {
            perror("mpi_cost: shm_open");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 0) {
        fd = shm_open(name, O_RDWR, 0600);
        if (fd < 0) {
            perror("mpi_cost: shm_open (the ranks must share a host)");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (page == MAP_FAILED) {
        perror("mpi_cost: mmap");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        shm_unlink(name);
    }
    return (volatile uint64_t *)page;
}

static int sendrecv(int rank, unsigned iterations, unsigned gap_us)
{
    volatile uint64_t *sent = shared_sent(rank);
    uint64_t buf            = 0;
    int bad                 = 0;
    unsigned i;

    for (i = 0; i < iterations; ++i) {
        if (rank == 0) {
            buf = 2 * (uint64_t)i;
            MPI_Send(&buf, 8, MPI_BYTE, 1, 27, MPI_COMM_WORLD);
            __atomic_store_n(sent, i + 1, __ATOMIC_RELEASE);
            MPI_Recv(&buf, 8, MPI_BYTE, 1, 27, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            bad |= (buf != 2 * (uint64_t)i + 1);
        } else if (rank == 1) {
            /* no MPI call while waiting: progress would receive the message outside
             * MPI_Recv.  Bounded: rank 0 aborts the job if it fails */
            while (__atomic_load_n(sent, __ATOMIC_ACQUIRE) < i + 1) {
                usleep(100);
            }
            usleep(gap_us);
            MPI_Recv(&buf, 8, MPI_BYTE, 0, 27, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            bad |= (buf != 2 * (uint64_t)i);
            buf = 2 * (uint64_t)i + 1;
            MPI_Send(&buf, 8, MPI_BYTE, 0, 27, MPI_COMM_WORLD);
        }
    }
    return bad;
}

/* The measured calls, noinline so that callgrind sees them: the cost section collects put_op and
 * flush_op (two names without a common prefix: valgrind 3.19's callgrind collected nothing in
 * PMPI_Put given *MPI_Put and *MPI_Win_flush to collect, as with PMPI_Send and PMPI_Recv) */
__attribute__((noinline)) void put_op(const uint64_t *value, MPI_Win win)
{
    MPI_Put(value, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, win);
}

__attribute__((noinline)) void flush_op(MPI_Win win)
{
    MPI_Win_flush(1, win);
}

static int put(int rank, unsigned iterations, unsigned gap_us)
{
    uint64_t *base, value = 0;
    MPI_Win win;
    unsigned i;
    int bad = 0;

    MPI_Win_allocate(4096, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    memset(base, 0, 4096);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
        for (i = 0; i < iterations; ++i) {
            value = i + 1;
            put_op(&value, win);
            usleep(gap_us);
            flush_op(win);
        }
        MPI_Win_unlock_all(win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        /* rank 0's MPI_Win_unlock_all completed its puts at this window before the barrier;
         * an RDMA write lands in this memory itself (the unified model) */
        bad = (*(volatile uint64_t *)base != iterations);
    }
    MPI_Win_free(&win);
    return bad;
}

int main(int argc, char **argv)
{
    unsigned iterations, gap_us;
    int rank, size, bad;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2 || size != 2 || (strcmp(argv[1], "sendrecv") && strcmp(argv[1], "put"))) {
        if (rank == 0) {
            fprintf(stderr, "usage: mpirun -np 2 mpi_cost sendrecv|put [ITERATIONS] [GAP_US]\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    iterations = (argc > 2) ? (unsigned)atoi(argv[2]) : 200;
    gap_us     = (argc > 3) ? (unsigned)atoi(argv[3]) : 20000;
    bad        = !strcmp(argv[1], "put") ? put(rank, iterations, gap_us)
                                         : sendrecv(rank, iterations, gap_us);
    if (bad) {
        fprintf(stderr, "mpi_cost %s rank %d: wrong data\n", argv[1], rank);
    } else {
        printf("mpi_cost %s rank %d ok\n", argv[1], rank);
    }
    MPI_Finalize();
    return bad;
}
