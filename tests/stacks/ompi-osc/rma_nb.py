#!/usr/bin/python3
"""mpirun -np N python3 rma_nb.py [ROUNDS]: request-based (nonblocking) one-sided MPI through
mpi4py, the calls of mpi4py's own test_rma_nb (MPI_Rput, MPI_Rget, MPI_Raccumulate,
MPI_Rget_accumulate in a passive-target epoch, each request waited on, MPI_Win_flush between a
write and the read that checks it), written here because Debian 12 ships mpi4py without its
tests.  Every rank targets every rank (itself included) with 0..9 elements of int32, int64,
float32 and float64, every accumulate operation; every value read back is checked.  Exit status
0 and one line "rma_nb: rank R: N checks ok" per rank, else 1 naming the first wrong value."""

import sys
from array import array

from mpi4py import MPI

TYPECODES = ("i", "q", "f", "d")
MAX_COUNT = 10


def fail(what):
    print(f"rma_nb: rank {MPI.COMM_WORLD.Get_rank()}: {what}", file=sys.stderr, flush=True)
    MPI.COMM_WORLD.Abort(1)


class Window:
    """A window of MAX_COUNT elements of `typecode` per rank, zeroed, with the epoch helpers."""

    def __init__(self, comm, typecode):
        self.typecode = typecode
        self.itemsize = array(typecode).itemsize
        self.memory = MPI.Alloc_mem(MAX_COUNT * self.itemsize)
        self.win = MPI.Win.Create(self.memory, self.itemsize, MPI.INFO_NULL, comm)

    def reset(self, rank, count):
        self.win.Lock(rank)
        self.win.Rput(array(self.typecode, [0] * count), rank).Wait()
        self.win.Unlock(rank)

    def read(self, rank, count):
        """count elements of `rank`'s window, and a guard after them that must stay untouched"""
        out = array(self.typecode, [-1] * (count + 1))
        self.win.Lock(rank)
        self.win.Rget([out, count], rank).Wait()
        self.win.Unlock(rank)
        if out[-1] != -1:
            fail(f"Rget of {count} wrote past them ({out[-1]})")
        return out[:count]

    def free(self):
        self.win.Free()
        MPI.Free_mem(self.memory)


def put_get(w, rank, count):
    """Rput, flush, Rget in one epoch: the read sees the write"""
    data = array(w.typecode, range(count))
    back = array(w.typecode, [-1] * count)
    w.win.Lock(rank)
    w.win.Rput(data, rank).Wait()
    w.win.Flush(rank)
    w.win.Rget(back, rank).Wait()
    w.win.Unlock(rank)
    if list(back) != list(data):
        fail(f"Rput/Rget {w.typecode}[{count}] at rank {rank}: read {list(back)}")
    return count


def accumulate(w, comm, rank, count, name, op):
    """Every rank Raccumulates range(count) into `rank`'s zeroed window: SUM gives size * i,
    MAX and MIN give i (0 is below every value, so MIN starts from the data itself)"""
    size = comm.Get_size()
    if comm.Get_rank() == 0:
        w.reset(rank, count)
    comm.Barrier()
    first = op == MPI.MIN
    if first and comm.Get_rank() == 0:  # MIN of 0 and i is 0: start from the data
        w.win.Lock(rank)
        w.win.Rput(array(w.typecode, range(count)), rank).Wait()
        w.win.Unlock(rank)
    comm.Barrier()
    w.win.Lock(rank)
    w.win.Raccumulate(array(w.typecode, range(count)), rank, op=op).Wait()
    w.win.Unlock(rank)
    comm.Barrier()
    checks = 0
    if comm.Get_rank() == 0:
        want = [size * i if op == MPI.SUM else i for i in range(count)]
        got = w.read(rank, count)
        if list(got) != want:
            fail(f"Raccumulate({name}) {w.typecode}[{count}] at rank {rank}: {list(got)}, "
                 f"want {want}")
        checks = count
    comm.Barrier()
    return checks


def get_accumulate(w, comm, rank, count):
    """Rget_accumulate(SUM) of 1s by every rank in turn: each sees the sum before its own"""
    size = comm.Get_size()
    if comm.Get_rank() == 0:
        w.reset(rank, count)
    comm.Barrier()
    seen = []
    for turn in range(size):
        if comm.Get_rank() == turn:
            old = array(w.typecode, [-1] * count)
            w.win.Lock(rank)
            w.win.Rget_accumulate(array(w.typecode, [1] * count), old, rank, op=MPI.SUM).Wait()
            w.win.Unlock(rank)
            seen = list(old)
        comm.Barrier()
    if seen != [comm.Get_rank()] * count:
        fail(f"Rget_accumulate {w.typecode}[{count}] at rank {rank}: fetched {seen}, "
             f"want {[comm.Get_rank()] * count}")
    # and a NO_OP fetch reads the total
    total = array(w.typecode, [-1] * count)
    w.win.Lock(rank)
    w.win.Rget_accumulate(array(w.typecode, [0] * count), total, rank, op=MPI.NO_OP).Wait()
    w.win.Unlock(rank)
    if list(total) != [size] * count:
        fail(f"Rget_accumulate(NO_OP) {w.typecode}[{count}] at rank {rank}: {list(total)}")
    comm.Barrier()
    return 2 * count


def main():
    comm = MPI.COMM_WORLD
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    checks = 0
    for _ in range(rounds):
        for typecode in TYPECODES:
            w = Window(comm, typecode)
            for rank in range(comm.Get_size()):
                for count in range(MAX_COUNT):
                    checks += put_get(w, rank, count)
                    comm.Barrier()
                    for name, op in (("SUM", MPI.SUM), ("MAX", MPI.MAX), ("MIN", MPI.MIN)):
                        checks += accumulate(w, comm, rank, count, name, op)
                    checks += get_accumulate(w, comm, rank, count)
            w.free()
    print(f"rma_nb: rank {comm.Get_rank()}: {checks} checks ok", flush=True)


if __name__ == "__main__":
    main()
