"""The RDMA device, port and GID index a run measures on, as `gdr-doctor --json` reports them:
the facts and the GID rule (gdr_select_gid, uct_gdr/src/topo) that gdr_rc itself uses, so that
perftest and gdr_rc speak from the same GID.  compare has no rule of its own."""

import collections
import json
import shlex
import subprocess

# Where the doctor lives in a build tree (tools.find_tool looks there, next to the plugin).
DOCTOR = ("perf", "doctor", "gdr-doctor")


class DeviceError(Exception):
    """Why the run cannot measure on the device asked for (the run stops with this line)."""


def doctor_report(doctor, gid_index=None):
    """`gdr-doctor --json [--gid-index N]`, parsed.  Its exit status 0-2 says how ready the
    machine is for GPUDirect RDMA, which does not matter here; 3 is a usage or internal error.
    An explicit index goes to the doctor, which judges it (an empty slot has no index)."""
    cmd = [doctor, "--json"] + (["--gid-index", str(gid_index)] if gid_index is not None else [])
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise DeviceError(f"{shlex.join(cmd)}: {e}")
    if proc.returncode not in (0, 1, 2):
        why = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise DeviceError(f"{shlex.join(cmd)}: exit status {proc.returncode}: {why}")
    try:
        return json.loads(proc.stdout)
    except ValueError as e:
        raise DeviceError(f"{shlex.join(cmd)}: no JSON report ({e})")


def device_names(report):
    return [device["name"] for device in report["rdma_devices"]]


class Port(collections.namedtuple("Port", "device port gid_index gid_reason link_layer")):
    """One port as the doctor saw it; gid_index is None where no GID qualifies."""

    @property
    def perftest_gid(self):
        """perftest's -x: RoCE needs the GID (it addresses by IP); InfiniBand routes by LID."""
        return self.gid_index if self.link_layer == "Ethernet" else None


def choose_port(report, wanted=None, default_device=None):
    """The port of `wanted` (DEV[:PORT]), else of `default_device` ($RXE_DEV), else of the first
    device the doctor lists; port 1 unless named."""
    names = device_names(report)
    if wanted:
        name, _, port = wanted.partition(":")
        port = int(port or 1)
    else:
        name, port = default_device or names[0], 1
    if name not in names:
        raise DeviceError(f"no RDMA device {name} (have: {' '.join(names) or 'none'})")
    device = report["rdma_devices"][names.index(name)]
    ports = {p["port"]: p for p in device["ports"]}
    if port not in ports:
        raise DeviceError(f"no port {port} on {name} (ports: "
                          f"{' '.join(map(str, sorted(ports))) or 'none'})")
    facts = ports[port]
    selection = facts["gid_selection"]
    return Port(name, port, selection["index"], selection["reason"], facts["link_layer"])
