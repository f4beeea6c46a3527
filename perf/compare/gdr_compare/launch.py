"""Starting the measuring processes: a server/client pair (ucx_perftest, perftest) or one launcher
that starts all ranks itself (gdr_perftest -N, mpirun), with their output kept under logs/.

The bound follows progress, not the clock alone: a process is ended when it has made none for
`stall_s` seconds -- no output from any process of the pair or launch, and no change of what
`probe()` reports (the cost section's callgrind profiles, one file per call; a server that has
not listened yet: the CPU it uses) -- or when it has
run `cap_s` in all (CAP_FACTOR x stall_s).  A client under valgrind on a loaded TCG guest takes
minutes for what an idle one does in one, but it keeps printing results and writing profiles; a
fixed limit killed such clients with their finished tests in the log.  A stuck pair (a peer that
waits forever for the other) prints nothing and is ended after stall_s, its reason naming that
bound and the last line it printed.  Nothing here waits without a bound."""

import os
import re
import shlex
import signal
import socket
import subprocess
import threading
import time

# the cap on a launch that keeps making progress, as a multiple of the stall bound: something
# that prints forever must still end (the quick default: 90 s without progress, 15 min in all)
CAP_FACTOR = 10
POLL_S = 0.2
# the reasons follow() gives (cli.py points the user at --timeout when a row has one)
STALLED = r"no progress for \S+ s|still running after \S+ s in all"


def tcp_listening(port, remote=None):
    """True when a socket listens on TCP `port` (here, or on `remote`'s host).  Read from
    /proc: a probing connect() would be accepted by ucx_perftest/perftest as their one client."""
    if remote is not None:
        return listening_in(remote.read("/proc/net/tcp", "/proc/net/tcp6"), port)
    text = ""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                text += f.read()
        except OSError:
            pass
    return listening_in(text, port)


def listening_in(tables, port):
    """Whether /proc/net/tcp{,6} text `tables` has a listening socket (state 0A) on `port`."""
    suffix = f":{port:04X}"
    for line in tables.splitlines():
        fields = line.split()
        if len(fields) > 3 and fields[3] == "0A" and fields[1].endswith(suffix):
            return True
    return False


class Remote:
    """The host a pair's server runs on when measuring across a wire (--peer), and the command
    that reaches it (`shell HOST COMMAND`: ssh, or any launcher that runs a shell command line
    there).  The server gets this side's working directory, the same paths, and the
    environment that selects what is measured (UCX_*, GDR_*, LD_PRELOAD, LD_LIBRARY_PATH): a
    shared file system, or the fabric's guests, which see the host's tree."""

    PASSED = ("UCX_", "GDR_", "LD_PRELOAD", "LD_LIBRARY_PATH")

    def __init__(self, host, shell=("ssh",)):
        self.host, self.shell = host, tuple(shell)

    def command(self, cmd, env):
        """`cmd` run on the host with `env`'s measuring variables.  It ends when this side's
        launcher does (its stdin closes: a killed pair leaves nothing behind there) and
        returns the server's exit status."""
        passed = [f"{k}={v}" for k, v in sorted(env.items()) if k.startswith(self.PASSED)]
        server = shlex.join(["env", *passed, *cmd])
        # (a shell gives a background job /dev/null for stdin unless told: fd 3 carries it; the
        # watcher is the shell's own `read`, no child that would outlive it and hold stdin)
        script = (f"cd {shlex.quote(os.getcwd())} || exit 1; exec 3<&0; {server} </dev/null & "
                  "p=$!; { while read -r _; do :; done <&3; kill $p; } >/dev/null 2>&1 & w=$!; "
                  "exec 3<&-; "
                  "wait $p; rc=$?; kill $w 2>/dev/null; exit $rc")
        return [*self.shell, self.host, script]

    def read(self, *paths):
        """The files' text on the host ('' where the launcher fails)."""
        try:
            return subprocess.run([*self.shell, self.host, shlex.join(["cat", *paths])],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, timeout=60).stdout
        except (OSError, subprocess.TimeoutExpired):
            return ""


def port_is_free(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
            return True
        except OSError:
            return False


class PortAllocator:
    """A fresh TCP port per pair: no pair can meet a previous pair's lingering server."""

    def __init__(self, first):
        self.next = first

    def take(self):
        while not port_is_free(self.next):
            self.next += 1
        self.next += 1
        return self.next - 1


ERROR_WORDS = re.compile(r"error|fail|unsupported|not found|no such|invalid|couldn't|cannot|unable|"
                         r"timed out|no .*resources", re.I)
# valgrind's own lines (==pid== / --pid--): progress, never the reason a peer failed
VALGRIND_LINE = re.compile(r"^(==|--)\d+(==|--)")


# the launchers' own explanations (Open MPI's help texts, between lines of dashes): what they
# say ("the error message you will receive is this one") names no cause
HELP_RULE = re.compile(r"^-{20,}$")
# libraries' own error reports, the lowest layer's first: UCX's log ("UCX  ERROR ..."), then an
# MPI library's ("*** An error occurred in MPI_Send"), which follows from it
LIBRARY_ERRORS = (re.compile(r"\bERROR\b|\bFATAL\b"), re.compile(r"An error occurred in"))


def last_error_line(*texts):
    """The most telling line of a failed peer's output, for the n/a reason: a library's last
    error report, else the last line with an error word; neither inside a launcher's help text
    nor valgrind's own unless nothing else has one.  Without the log's time and host."""
    for text in texts:
        lines, inside_help = [], False
        for line in text.splitlines():
            if HELP_RULE.match(line.strip()):
                inside_help = not inside_help
            elif not inside_help and not VALGRIND_LINE.match(line):
                lines.append(line)
        everywhere = [x for x in text.splitlines() if not VALGRIND_LINE.match(x)]
        for pattern, where in ([(p, lines) for p in LIBRARY_ERRORS] +
                               [(ERROR_WORDS, lines), (ERROR_WORDS, everywhere)]):
            found = next((x for x in reversed(where) if pattern.search(x)), None)
            if found is not None:
                return re.sub(r"^(\[[^\]]*\]\s*){1,2}", "", found.strip())[:200]
    return last_line(*texts)


def last_line(*texts):
    """The last non-empty line of the first text that has one, or "no output"; the program's
    own, where valgrind's (its start-up with -v, its summary) surround it."""
    for text in texts:
        lines = [line for line in text.splitlines() if line.strip()]
        own = [line for line in lines if not VALGRIND_LINE.match(line)]
        if own or lines:
            return (own or lines)[-1].strip()[:200]
    return "no output"


class Process:
    """A started process (its own session: the group is what gets killed) whose output a thread
    reads as it comes; `last` is the time of its latest output."""

    def __init__(self, cmd, env, keep_stdin=False):
        """keep_stdin: a pipe that stays open while the process runs (a Remote server ends when
        it closes) instead of this process's own stdin"""
        self.cmd = cmd
        self.chunks = []
        self.last = time.monotonic()
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                     stdin=subprocess.PIPE if keep_stdin else None,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self):
        fd = self.proc.stdout.fileno()
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                return
            self.chunks.append(chunk)
            self.last = time.monotonic()

    @property
    def output(self):
        return b"".join(self.chunks).decode("utf-8", "replace")

    def kill(self):
        """SIGTERM to the group, SIGKILL 5 s later if anything of it is left."""
        for sig, grace in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
            try:
                os.killpg(self.proc.pid, sig)
            except OSError:
                break
            try:
                self.proc.wait(timeout=grace)
                break
            except subprocess.TimeoutExpired:
                continue

    def finish(self):
        """Reaps the process and its reader: the output is complete afterwards."""
        self.proc.wait()
        self.reader.join(timeout=10)
        self.proc.stdout.close()
        if self.proc.stdin:
            self.proc.stdin.close()
        return self.proc.returncode


def cpu_time(pid):
    """Clock ticks of CPU that process `pid` has used (user + system), or None when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    except (OSError, IndexError, ValueError):
        return None


class Progress:
    """When the processes of one pair or launch last made progress: any output of any of them,
    or a new value of probe() (None: none)."""

    def __init__(self, procs, probe=None):
        self.procs, self.probe = procs, probe
        self.seen = probe() if probe else None
        self.probed = time.monotonic()

    def last(self):
        if self.probe:
            now = self.probe()
            if now != self.seen:
                self.seen, self.probed = now, time.monotonic()
        return max([self.probed] + [p.last for p in self.procs])


def starting(proc):
    """A probe for a server that has not listened yet: the CPU it has used.  Its start-up (UCX's
    init, valgrind's) prints nothing, and a niced server on CPUs that others keep busy takes
    minutes of wall for seconds of CPU; one that uses none is stuck.  Only before it listens: a
    peer that waits for the other busy-polls, so CPU says nothing once the pair runs."""
    return lambda: cpu_time(proc.proc.pid)


def follow(proc, progress, stall_s, cap_s, t0, until=None):
    """Waits for `proc` to exit, or for until() to be true, while `progress` moves -> None, or
    why it was given up: no progress for stall_s, or cap_s since t0 (the caller kills)."""
    while proc.proc.poll() is None and not (until and until()):
        now = time.monotonic()
        if now - progress.last() > stall_s:
            return f"no progress for {stall_s:g} s"
        if now - t0 > cap_s:
            return f"still running after {cap_s:g} s in all"
        time.sleep(POLL_S)
    return None


def stalled(who, why, out):
    """The one-line reason of a process given up, with the last line it printed."""
    return f"{who} ended: {why} (last output: {last_line(out)!r})"


def run_pair(name, server_cmd, client_cmd, env, port, timeout_s, logdir, listen_s=60, exit_s=10,
             probe=None, remote=None):
    """Start the server (on `remote`'s host when given, a Remote), wait for it to listen on `port`
    (at most listen_s without progress), run
    the client until it exits or stalls (timeout_s without progress of the pair: either peer's
    output, or probe()'s value), then give the server exit_s without progress to end (3 s after
    a client that failed) before its group is killed.
    Returns (ok, client_output, server_output, reason, wall_seconds)."""
    t0 = time.monotonic()
    cap_s = CAP_FACTOR * timeout_s
    if remote is not None:
        server_cmd = remote.command(server_cmd, env)
    server = Process(server_cmd, env, keep_stdin=remote is not None)
    reason = None
    client = None
    try:
        # a remote server's CPU is not seen from here: its launcher's output is the progress
        why = follow(server, Progress([server], None if remote else starting(server)),
                     min(listen_s, timeout_s), cap_s, t0,
                     until=lambda: tcp_listening(port, remote))
        if server.proc.poll() is not None and not tcp_listening(port, remote):
            reason = "server exited before listening"
        elif why:
            reason = (f"server did not listen on TCP port {port}: {why} (last output: "
                      f"{last_line(server.output)!r})")
        if reason is None:
            client = Process(client_cmd, env)
            why = follow(client, Progress([server, client], probe), timeout_s, cap_s, t0)
            if why:
                reason = stalled("client", why, client.output)  # its last line before the kill
                client.kill()
                print(f"  compare: {name}: {reason}", flush=True)
            client_rc = client.finish()
        grace = exit_s if client is not None and client_rc == 0 else 3
        if follow(server, Progress([server], probe), grace, cap_s + grace, time.monotonic()):
            server.kill()
            if reason is None and client_rc == 0:
                reason = (f"server did not exit within {grace:g} s of no progress after the "
                          f"client finished (last output: {last_line(server.output)!r})")
    finally:  # interrupted: nothing of the pair outlives the run
        for p in (server, client):
            if p is not None and p.proc.poll() is None:
                p.kill()
    server.finish()
    wall = time.monotonic() - t0
    client_out = client.output if client else ""
    with open(os.path.join(logdir, f"{name}.client.log"), "w") as f:
        f.write("$ " + shlex.join(client_cmd) + "\n" + client_out)
    with open(os.path.join(logdir, f"{name}.server.log"), "w") as f:
        f.write("$ " + shlex.join(server_cmd) + "\n" + server.output)
    if reason is None and client_rc != 0:
        reason = (f"client exit status {client_rc}: "
                  f"{last_error_line(client_out, server.output)}")
    if reason is None and server.proc.returncode != 0:
        reason = f"server exit status {server.proc.returncode}: {last_error_line(server.output)}"
    return reason is None, client_out, server.output, reason, wall


LOGGED_ENV = ("UCX_TLS", "UCX_NET_DEVICES", "UCX_UD_VERBS_ETH_DGID_CHECK", "LD_PRELOAD")


def run_single(name, cmd, env, timeout_s, logdir, probe=None, cap_s=None):
    """One command (a launcher that starts all the ranks itself: gdr_perftest -N, mpirun), its
    whole process group killed after timeout_s without progress (output, probe()), or cap_s in
    all (default CAP_FACTOR x timeout_s).  Returns (ok, output, reason, wall_seconds)."""
    t0 = time.monotonic()
    proc = Process(cmd, env)
    try:
        why = follow(proc, Progress([proc], probe), timeout_s, cap_s or CAP_FACTOR * timeout_s,
                     t0)
        if why:
            last = proc.output  # what it printed before the kill
            proc.kill()
    finally:
        if proc.proc.poll() is None:
            proc.kill()
    rc = proc.finish()
    out = proc.output
    wall = time.monotonic() - t0
    with open(os.path.join(logdir, f"{name}.log"), "w") as f:
        shown = " ".join(f"{k}={env[k]}" for k in LOGGED_ENV if env.get(k))
        f.write(f"$ {shown + ' ' if shown else ''}{shlex.join(cmd)}\n{out}")
    reason = None
    if why:
        reason = stalled("launch", why, last)
        print(f"  compare: {name}: {reason}", flush=True)
    elif rc != 0:
        reason = f"exit status {rc}: {last_error_line(out)}"
    return reason is None, out, reason, wall
