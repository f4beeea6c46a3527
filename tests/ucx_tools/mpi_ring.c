/* A ring of point-to-point messages with every byte checked, then MPI_Allreduce, for running
 * OpenMPI's pml ucx over the transport under test (mpi_ring.sh).  Message sizes cover UCP's
 * eager short, eager bcopy and rendezvous (zcopy/RMA) protocols.  Prints one "rank R ok" line
 * per rank and exits non-zero on any mismatch. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned char pattern(int origin, int round, size_t i)
{
    uint32_t x = (uint32_t)i * 2654435761u ^ (uint32_t)(origin * 40503 + round * 977);
    return (unsigned char)(x ^ (x >> 11) ^ (x >> 23));
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {0, 1, 8, 100, 4096, 8300, 65536, 1 << 20, 4 << 20};
    const int rounds            = 3;
    int rank, nranks, errors = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    unsigned char *sendbuf = malloc(4 << 20), *recvbuf = malloc(4 << 20);
    if (!sendbuf || !recvbuf) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); ++s) {
        for (int round = 0; round < rounds; ++round) {
            const size_t n = sizes[s];
            for (size_t i = 0; i < n; ++i) {
                sendbuf[i] = pattern(rank, round, i);
            }
            MPI_Request reqs[2];
            MPI_Status status;
            int count;
            MPI_Irecv(recvbuf, (int)n, MPI_BYTE, prev, round, MPI_COMM_WORLD, &reqs[0]);
            MPI_Isend(sendbuf, (int)n, MPI_BYTE, next, round, MPI_COMM_WORLD, &reqs[1]);
            MPI_Wait(&reqs[0], &status);
            MPI_Wait(&reqs[1], MPI_STATUS_IGNORE);
            MPI_Get_count(&status, MPI_BYTE, &count);
            if ((size_t)count != n) {
                fprintf(stderr, "rank %d: size %zu round %d: received %d bytes\n", rank, n, round,
                        count);
                ++errors;
                continue;
            }
            for (size_t i = 0; i < n; ++i) {
                if (recvbuf[i] != pattern(prev, round, i)) {
                    fprintf(stderr,
                            "rank %d: size %zu round %d: byte %zu is 0x%02x, expected 0x%02x\n",
                            rank, n, round, i, recvbuf[i], pattern(prev, round, i));
                    ++errors;
                    break;
                }
            }
        }
    }

    /* Allreduce: sum of (rank + 1) * (i + 1) over ranks, element-wise, 1 Mi longs (rendezvous) */
    const int elems = 1 << 17;
    long *in = malloc(sizeof(long) * elems), *out = malloc(sizeof(long) * elems);
    for (int i = 0; i < elems; ++i) {
        in[i] = (long)(rank + 1) * (i + 1);
    }
    MPI_Allreduce(in, out, elems, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    const long ranks_sum = (long)nranks * (nranks + 1) / 2;
    for (int i = 0; i < elems; ++i) {
        if (out[i] != ranks_sum * (i + 1)) {
            fprintf(stderr, "rank %d: allreduce element %d is %ld, expected %ld\n", rank, i, out[i],
                    ranks_sum * (i + 1));
            ++errors;
            break;
        }
    }

    int total = 0;
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (total == 0) {
        printf("rank %d of %d ok\n", rank, nranks);
    }
    free(in);
    free(out);
    free(sendbuf);
    free(recvbuf);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
