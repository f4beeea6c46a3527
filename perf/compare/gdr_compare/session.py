"""What every section of one run shares: the port (from gdr-doctor), iteration counts, TCP ports,
timeouts, the log directory, the plugin and the project's tools, and the environment of a
measuring process."""

import os
import platform
import shlex
import re
import subprocess
import sys
import time

from .devices import DeviceError, choose_port, device_names
from .interleave import LoadProbe
from .launch import PortAllocator, Remote, last_error_line
from .measure import Results
from .plan import Iterations
from .sections import RUNNERS
from .tools import find_tool, ucx_version


def ethernet_netdev(port):
    """The network interface under a RoCE port's GID (UCX_NET_DEVICES of the tcp side), or None
    (InfiniBand, or no GID)."""
    if port.gid_index is None or port.link_layer != "Ethernet":
        return None
    path = (f"/sys/class/infiniband/{port.device}/ports/{port.port}/gid_attrs/ndevs/"
            f"{port.gid_index}")
    try:
        with open(path) as f:
            return f.read().strip() or None
    except OSError:
        return None


class Session:
    def __init__(self, args, report):
        """report: gdr-doctor's JSON report of this machine (devices.doctor_report)."""
        self.args = args
        self.iters = Iterations(args.quick)
        self.ports = PortAllocator(args.base_port)
        self.timeout = args.timeout or (90 if args.quick else 600)
        self.load = LoadProbe(args.host_loadavg, bool(os.environ.get("RXE_VM")))
        self.results = Results(args.pairs, self.load)
        self.sections = []
        self.logdir = os.path.join(args.out, "logs")
        os.makedirs(self.logdir, exist_ok=True)
        if not device_names(report):
            print("compare: no RDMA device here (run with --vm auto or always)", file=sys.stderr)
            sys.exit(77)
        try:
            self.port = choose_port(report, args.device, os.environ.get("RXE_DEV"))
        except DeviceError as e:
            sys.exit(f"compare: {e}")
        self.net_device = f"{self.port.device}:{self.port.port}"  # UCX_NET_DEVICES, ucx_info -d
        self.gdr_plugin = os.environ.get("GDR_PLUGIN", "")
        self.gdr_unavailable = self.check_gdr()
        self.gdr_perftest, self.gdr_perftest_missing = find_tool(
            args.gdr_perftest, self.gdr_plugin, ("perf", "gdr_perftest", "gdr_perftest"),
            "--gdr-perftest")
        self.coll_bench, self.coll_bench_missing = find_tool(
            args.coll_bench, self.gdr_plugin, ("perf", "coll_bench", "coll_bench"), "--coll-bench")
        self.provider_ops, self.provider_ops_missing = find_tool(
            args.provider_ops, self.gdr_plugin, ("perf", "cost", "provider_ops"),
            "--provider-ops")
        self.coll_ranks = args.coll_ranks or ([2] if args.quick else [2, 4])
        # --peer: each pair's server on that host, its client here, across the wire between
        peer = getattr(args, "peer", None)
        self.remote = Remote(peer, shlex.split(args.peer_shell)) if peer else None
        self.server_addr = peer or "127.0.0.1"
        self.tcp_device = ethernet_netdev(self.port) if peer else None

    def wanted(self, test):
        """--test: whether a test of the uct, ucp, raw or wrapper section is to run."""
        return not self.args.test or test in self.args.test

    def base_env(self, transport):
        """The environment of every measuring process: the port, UCX 1.13's UD on rxe (docs/
        rxe-vm.md), and the plugin preloaded for gdr_rc only (rc_verbs is the unmodified UCX)."""
        env = dict(os.environ)
        env.update(UCX_NET_DEVICES=self.net_device, UCX_UD_VERBS_ETH_DGID_CHECK="n",
                   UCX_WARN_UNUSED_ENV_VARS="n")
        preload = [p for p in env.get("LD_PRELOAD", "").split(":") if p and p != self.gdr_plugin]
        if transport == "gdr_rc":
            preload.insert(0, self.gdr_plugin)
        if preload:
            env["LD_PRELOAD"] = ":".join(preload)
        else:
            env.pop("LD_PRELOAD", None)
        return env

    def check_gdr(self):
        """None when gdr_rc can be measured on the port, else why not."""
        if not self.gdr_plugin:
            return "GDR_PLUGIN not set (path to libuct_gdr.so)"
        if not os.path.isfile(self.gdr_plugin):
            return f"GDR_PLUGIN={self.gdr_plugin} does not exist"
        try:
            info = subprocess.run(["ucx_info", "-d"], env=self.base_env("gdr_rc"), text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"ucx_info -d failed: {e}"
        device = transport = None
        for line in info.stdout.splitlines():
            m = re.match(r"#\s+(Transport|Device):\s+(\S+)", line)
            if m and m.group(1) == "Transport":
                transport = m.group(2)
            elif m and transport == "gdr_rc" and m.group(2) == self.net_device:
                device = m.group(2)
        if device is None:
            return (f"ucx_info -d with the plugin lists no gdr_rc on {self.net_device}"
                    f" ({last_error_line(info.stdout)})")
        return None

    def run(self, sections):
        """Measures `sections` in order; returns the run's meta data for results.json."""
        gid = self.port.gid_index
        print(f"compare: device {self.net_device}, GID index "
              f"{gid if gid is not None else 'n/a'}, {'quick' if self.args.quick else 'full'}"
              f" iterations; gdr_rc: "
              f"{self.gdr_unavailable or 'available (' + self.gdr_plugin + ')'}", flush=True)
        t0 = time.monotonic()
        section_wall = {}
        self.sections = list(sections)
        for section in sections:
            t1 = time.monotonic()
            RUNNERS[section](self)
            section_wall[section] = round(time.monotonic() - t1, 1)
        return dict(section_wall_s=section_wall, device=self.net_device, gid_index=gid,
                    gid_reason=self.port.gid_reason, gdr_plugin=self.gdr_plugin or None,
                    gdr_unavailable=self.gdr_unavailable,
                    measure_wall_s=round(time.monotonic() - t0, 1), kernel=platform.release(),
                    pairs=self.results.pairs, load_source=self.load.source,
                    ucx_version=ucx_version(), in_rxe_vm=bool(os.environ.get("RXE_VM")))
