"""Sizes, metrics and their units: what every row of results.json is measured in."""

KiB, MiB = 1024, 1024 * 1024

LAT, BW = "latency_us", "bandwidth_MiBps"
MR = "msgrate_per_s"  # messages per second (ucx_perftest's overall message rate)
TIME, BUSBW = "time_us", "busbw_GBps"  # collectives: time per call; bus bandwidth, 1 GB = 10^9 B
UNIT = {LAT: "us", BW: "MiB/s", MR: "msg/s", TIME: "us", BUSBW: "GB/s"}
# cost section (exact counts per operation, callgrind): instructions, and calls of the system call
# wrappers and of the verbs provider's post_send / post_recv / poll_cq
COST_METRICS = ("instr_per_op", "syscalls_per_op", "post_send_per_op", "post_recv_per_op",
                "poll_cq_per_op")
UNIT.update({m: m[:-len("_per_op")] + "/op" for m in COST_METRICS})


def size_label(size):
    if size >= MiB and size % MiB == 0:
        return f"{size // MiB} MiB"
    if size >= KiB and size % KiB == 0:
        return f"{size // KiB} KiB"
    return f"{size} B"
