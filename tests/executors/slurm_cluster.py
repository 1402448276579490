"""A real single-node Slurm cluster for the tests, from Debian's slurm-wlm and munge, started without systemd.

`start(folder)` writes a slurm.conf (state, spool, logs under `folder`; one node named after `hostname -s` with its
CPUs and memory; scheduling every second), starts a munged of its own on a private socket, then `slurmctld -D -i`
and `slurmd -D`, and waits for `sinfo` to show the node idle. `Cluster.stop()` stops every daemon it started. Commands
find the cluster through SLURM_CONF. Slurm runs as root here (SlurmUser=root): the tests skip unless run as root."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

PACKAGES = "slurm-wlm munge"


def missing() -> str | None:
    """Why a cluster cannot start here, or None."""
    absent = [c for c in ("slurmctld", "slurmd", "sbatch", "munged") if shutil.which(c) is None]
    if absent:
        return f"needs Debian's {PACKAGES} (apt-get install {PACKAGES}; .ci/run installs them): no {', '.join(absent)}"
    if os.geteuid() != 0:
        return "the test cluster runs Slurm as root (SlurmUser=root): run the tests as root"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def slurm_conf(folder: Path, host: str, cpus: int, mem_mb: int, munge_socket: Path) -> str:
    ctld, slurmd = _free_port(), _free_port()
    return f"""ClusterName=mixture-test
SlurmctldHost={host}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={munge_socket}
MailProg=/bin/true
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerParameters=sched_interval=1,bf_interval=1
ReturnToService=2
SlurmctldPort={ctld}
SlurmdPort={slurmd}
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd.pid
SlurmctldLogFile={folder}/slurmctld.log
SlurmdLogFile={folder}/slurmd.log
NodeName={host} CPUs={cpus} RealMemory={mem_mb} State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


@dataclass
class Cluster:
    conf: Path
    host: str
    cpus: int
    daemons: list[subprocess.Popen] = field(default_factory=list)
    scratch: Path | None = None  # munged's folder, removed at stop

    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *cmd: str) -> str:
        return subprocess.run(cmd, env=self.env(), capture_output=True, text=True, timeout=60, check=True).stdout

    def queue(self) -> list[str]:
        return self.run("squeue", "--noheader", "--format", "%i %T").split("\n")[:-1]

    def drain(self, timeout: float = 30) -> None:
        """Wait for the queue to empty (merge_stats jobs may still run after a build), then cancel what is left."""
        end = time.monotonic() + timeout
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError):
            while self.queue() and time.monotonic() < end:
                time.sleep(0.5)
            self.run("scancel", "--user", "root")
            while self.queue() and time.monotonic() < end + 10:  # a cancelled job's step ends before slurmd stops
                time.sleep(0.5)

    def stop(self) -> None:
        self.drain()
        for p in reversed(self.daemons):
            p.send_signal(signal.SIGTERM)
        for p in reversed(self.daemons):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.daemons.clear()
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)


def _munge_answers(socket_path: Path) -> bool:
    try:
        return subprocess.run(["munge", "-n", "--socket", str(socket_path)], capture_output=True,
                              timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _start_munge(folder: Path) -> subprocess.Popen:
    """A munged of its own, as the munge user (the package created its key), on a socket in `folder` (which the
    munge user owns): a munged started or stopped by anything else does not matter."""
    munge = pwd.getpwnam("munge")
    os.chown(folder, munge.pw_uid, munge.pw_gid)
    folder.chmod(0o755)  # munged refuses a socket folder others cannot enter
    sock = folder / "munge.socket"
    p = subprocess.Popen(["runuser", "-u", "munge", "--", "munged", "--foreground", f"--socket={sock}",
                          f"--pid-file={folder}/munged.pid", f"--log-file={folder}/munged.log",
                          f"--seed-file={folder}/munged.seed"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    for _ in range(50):
        if _munge_answers(sock):
            return p
        time.sleep(0.2)
    p.kill()
    raise RuntimeError(f"munged did not start; see {folder / 'munged.log'}")


def start(folder: Path) -> Cluster:
    folder.mkdir(parents=True, exist_ok=True)
    for d in ("state", "spool"):
        (folder / d).mkdir(exist_ok=True)
    host = socket.gethostname().split(".")[0]
    cpus = os.cpu_count() or 1
    mem_mb = int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20 * 0.8)
    munge_dir = Path(tempfile.mkdtemp(prefix="mixture-munge-"))  # pytest's folders are closed to the munge user
    conf = folder / "slurm.conf"
    conf.write_text(slurm_conf(folder, host, cpus, mem_mb, munge_dir / "munge.socket"))
    cluster = Cluster(conf, host, cpus, scratch=munge_dir)
    try:
        cluster.daemons.append(_start_munge(munge_dir))
        for cmd in (["slurmctld", "-D", "-i"], ["slurmd", "-D"]):
            log = (folder / f"{cmd[0]}.out").open("w")
            cluster.daemons.append(subprocess.Popen([*cmd, "-f", str(conf)], env=cluster.env(), stdout=log,
                                                    stderr=subprocess.STDOUT))
            time.sleep(0.5)
        end = time.monotonic() + 60
        while time.monotonic() < end:
            with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
                if cluster.run("sinfo", "--noheader", "--format", "%t").strip() == "idle":
                    return cluster
            time.sleep(0.5)
        raise RuntimeError(f"the Slurm node did not become idle within 60 s; see {folder}/slurmctld.log, slurmd.log")
    except BaseException:
        cluster.stop()
        raise
