"""Sizes, metrics and their units: what every row of results.json is measured in."""

KiB, MiB = 1024, 1024 * 1024

LAT, BW = "latency_us", "bandwidth_MiBps"
TIME, BUSBW = "time_us", "busbw_GBps"  # collectives: time per call; bus bandwidth, 1 GB = 10^9 B
UNIT = {LAT: "us", BW: "MiB/s", TIME: "us", BUSBW: "GB/s"}


def size_label(size):
    if size >= MiB and size % MiB == 0:
        return f"{size // MiB} MiB"
    if size >= KiB and size % KiB == 0:
        return f"{size // KiB} KiB"
    return f"{size} B"
