"""Starting the measuring processes: a server/client pair (ucx_perftest, perftest) or one launcher
that starts all ranks itself (gdr_perftest -N, mpirun), each bounded by timeout(1), with its
output kept under logs/.  Nothing here waits without a bound."""

import os
import re
import shlex
import signal
import socket
import subprocess
import time


def tcp_listening(port):
    """True when a socket listens on TCP `port`.  Read from /proc: a probing connect() would be
    accepted by ucx_perftest/perftest as their one client."""
    suffix = f":{port:04X}"
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == "0A" and fields[1].endswith(suffix):
                        return True
        except OSError:
            pass
    return False


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


def last_error_line(*texts):
    """The most telling line of a failed peer's output, for the n/a reason."""
    for text in texts:
        for line in reversed(text.splitlines()):
            if ERROR_WORDS.search(line):
                return re.sub(r"^\[[^\]]*\]\s*", "", line.strip())[:200]
    for text in texts:
        lines = [line for line in text.splitlines() if line.strip()]
        if lines:
            return lines[-1].strip()[:200]
    return "no output"


def run_pair(name, server_cmd, client_cmd, env, port, timeout_s, logdir, listen_s=60, exit_s=10):
    """Start the server, wait (at most listen_s) for it to listen on `port`, run the client; both
    bounded by timeout(1).  After a client that ended well the server has exit_s to end too
    (else it is killed), after one that failed a few seconds.
    Returns (ok, client_output, server_output, reason, wall_seconds)."""
    tmo = ["timeout", "-k", "5", str(timeout_s)]
    t0 = time.monotonic()
    server = subprocess.Popen(tmo + server_cmd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, start_new_session=True)
    reason = None
    listen_s = min(listen_s, timeout_s)
    deadline = time.monotonic() + listen_s
    while not tcp_listening(port):
        if server.poll() is not None:
            reason = "server exited before listening"
            break
        if time.monotonic() > deadline:
            reason = f"server did not listen on TCP port {port} within {listen_s} s"
            break
        time.sleep(0.05)
    client_out, client_rc = "", None
    if reason is None:
        client = subprocess.run(tmo + client_cmd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        client_out, client_rc = client.stdout, client.returncode
    try:
        server_out, _ = server.communicate(timeout=exit_s if client_rc == 0 else 3)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server_out, _ = server.communicate()
        if client_rc == 0:
            reason = "server did not exit after the client finished"
    wall = time.monotonic() - t0
    with open(os.path.join(logdir, f"{name}.client.log"), "w") as f:
        f.write("$ " + shlex.join(client_cmd) + "\n" + client_out)
    with open(os.path.join(logdir, f"{name}.server.log"), "w") as f:
        f.write("$ " + shlex.join(server_cmd) + "\n" + server_out)
    if reason is None and client_rc != 0:
        if client_rc == 124:
            reason = f"client timed out after {timeout_s} s"
        else:
            reason = f"client exit status {client_rc}: {last_error_line(client_out, server_out)}"
    if reason is None and server.returncode != 0:
        reason = f"server exit status {server.returncode}: {last_error_line(server_out)}"
    return reason is None, client_out, server_out, reason, wall


LOGGED_ENV = ("UCX_TLS", "UCX_NET_DEVICES", "UCX_UD_VERBS_ETH_DGID_CHECK", "LD_PRELOAD")


def run_single(name, cmd, env, timeout_s, logdir):
    """One bounded command (a launcher that starts all the ranks itself: gdr_perftest -N,
    mpirun), its whole process group killed at the timeout.  Returns (ok, output, reason,
    wall_seconds)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(["timeout", "-k", "5", str(timeout_s)] + cmd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout_s + 15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
    wall = time.monotonic() - t0
    with open(os.path.join(logdir, f"{name}.log"), "w") as f:
        shown = " ".join(f"{k}={env[k]}" for k in LOGGED_ENV if env.get(k))
        f.write(f"$ {shown + ' ' if shown else ''}{shlex.join(cmd)}\n{out}")
    reason = None
    if proc.returncode == 124 or proc.returncode < 0 or proc.returncode == 137:
        reason = f"timed out after {timeout_s} s"
    elif proc.returncode != 0:
        reason = f"exit status {proc.returncode}: {last_error_line(out)}"
    return reason is None, out, reason, wall
