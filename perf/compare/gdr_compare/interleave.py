"""Wall-clock ratios that mean something: the two things a row compares run in
alternation, A B A B ..., --pairs times, and the row's ratio is the median of the per-pair ratios
with their min-max.  A host whose load drifts (a TCG guest's speed follows it closely) then moves
both sides of a pair alike; what it still moves between pairs shows as spread, and a row whose
spread is wider than +-NOISY around its median is reported "noisy" instead of as a number.

The host's 1-minute load average is read at the start and the end of every pair.  Inside the
Soft-RoCE VM /proc/loadavg is the guest's, which says nothing about the emulator's speed: the host
side of the run keeps a copy of its own in the shared results directory (vm.py, HostLoadWriter)
and the guest reads that."""

import os
import statistics
import threading

NOISY = 0.10  # +-10 % around the median of the per-pair ratios
HOST_LOADAVG = ".host-loadavg"  # the host's /proc/loadavg, copied into the results directory


def ratio_stats(ratios, tolerance=NOISY):
    """Per-pair ratios -> dict(median, min, max, pairs, spread, noisy), or None without any.
    spread: the larger distance of min or max from the median, relative to it (0.12 = +-12 %).
    With one pair the spread is unknown (None): such a row is not "noisy", it is unjudged."""
    if not ratios:
        return None
    median = statistics.median(ratios)
    lo, hi = min(ratios), max(ratios)
    spread = None
    if len(ratios) > 1:
        spread = max(hi / median - 1, 1 - lo / median) if median > 0 else float("inf")
    # "wider than" +-10 %: exactly 10 % is not noisy (1.1 / 1.0 - 1 is 0.10000000000000009)
    return dict(median=median, min=lo, max=hi, pairs=len(ratios), spread=spread,
                noisy=spread is not None and spread > tolerance + 1e-9)


def per_pair_ratios(num, den):
    """Two sides' values by pair index (None where that pair's run failed) -> the ratios of the
    pairs in which both sides have a value: a failed run never pairs with another pair's."""
    return [a / b for a, b in zip(num, den) if a is not None and b is not None and b != 0]


def ratio_text(stats):
    """A ratio as the tables print it: "1.02 [0.97-1.06]" (median [min-max]), "noisy
    [0.62-1.31]" (no median: it would mislead), "0.98 [1 pair]" (spread unknown), "n/a"."""
    if not stats or stats.get("median") is None:
        return "n/a"
    if stats["pairs"] == 1:
        return f"{stats['median']:.2f} [1 pair]"
    lo_hi = f"[{stats['min']:.2f}-{stats['max']:.2f}]"
    return f"noisy {lo_hi}" if stats["noisy"] else f"{stats['median']:.2f} {lo_hi}"


def load_range(loads):
    """[[start, end], ...] of a row's pairs -> (lowest, highest) 1-minute load, or None."""
    values = [v for pair in loads or () for v in pair if v is not None]
    return (min(values), max(values)) if values else None


class LoadProbe:
    """The host's 1-minute load average now: from `host_copy` (the host's /proc/loadavg as the VM
    sees it) when given and readable, else this machine's /proc/loadavg.  `source` says which
    the last reading came from ("host", "host (copied into the VM)" or "guest")."""

    def __init__(self, host_copy=None, in_vm=False):
        self.host_copy = host_copy
        self.in_vm = in_vm
        self.source = None

    @staticmethod
    def read(path):
        try:
            with open(path) as f:
                return float(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def __call__(self):
        if self.host_copy:
            value = self.read(self.host_copy)
            if value is not None:
                self.source = "host (copied into the VM)"
                return value
        self.source = "guest" if self.in_vm else "host"
        return self.read("/proc/loadavg")


class HostLoadWriter:
    """Copies this machine's /proc/loadavg to `path` every `period` seconds while the VM
    measures (a context manager); the file is removed at the end."""

    def __init__(self, path, period=1.0):
        self.path, self.period = path, period
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def write(self):
        try:
            with open("/proc/loadavg") as f:
                text = f.read()
            tmp = self.path + ".tmp"
            with open(tmp, "w") as f:
                f.write(text)
            os.replace(tmp, self.path)  # a reader never sees half a line
        except OSError:
            pass

    def loop(self):
        while not self.stop.is_set():
            self.write()
            self.stop.wait(self.period)

    def __enter__(self):
        self.write()
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        for p in (self.path, self.path + ".tmp"):
            try:
                os.remove(p)
            except OSError:
                pass
