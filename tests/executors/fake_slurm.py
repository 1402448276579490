"""A tiny stand-in for a Slurm cluster on this machine: `sbatch`, `squeue`, `scancel`, `srun`, `scontrol`.

`install(bin_dir, state_dir)` writes the five commands as scripts into `bin_dir` (put it first on PATH). `sbatch`
records every submission (arguments, #SBATCH directives, the script) under `state_dir/jobs/<id>.json` and starts a
background runner that honours `--dependency` (afterok/afterany; a failed afterok dependency leaves the job pending
with reason DependencyNeverSatisfied, as Slurm does) and runs each array element with the real environment
variables (SLURM_ARRAY_TASK_ID, RUN_OFFSET, …). A job whose name is in FAKE_SLURM_FAIL (comma-separated) fails
without running."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

COMMANDS = ("sbatch", "squeue", "scancel", "srun", "scontrol")
TERMINAL = ("COMPLETED", "FAILED", "CANCELLED")
NEVER = "DependencyNeverSatisfied"
MAX_PARALLEL = 2  # array elements run at once (the machine has 2 cores)


def install(bin_dir: Path, state_dir: Path) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "jobs").mkdir(parents=True, exist_ok=True)
    for cmd in COMMANDS:
        p = bin_dir / cmd
        p.write_text(f'#!/bin/sh\nFAKE_SLURM_DIR="{state_dir}" exec "{sys.executable}" "{Path(__file__).resolve()}" {cmd} "$@"\n')
        p.chmod(0o755)


def state_dir() -> Path:
    return Path(os.environ["FAKE_SLURM_DIR"])


def job_path(job_id: str) -> Path:
    return state_dir() / "jobs" / f"{job_id}.json"


def load(job_id: str) -> dict:
    return json.loads(job_path(job_id).read_text())


def save(job: dict) -> None:
    p = job_path(job["id"])
    tmp = p.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(job, indent=1))
    tmp.replace(p)


def jobs() -> list[dict]:
    return sorted((json.loads(p.read_text()) for p in (state_dir() / "jobs").glob("*.json")), key=lambda j: int(j["id"]))


def update(job_id: str, **fields) -> None:
    job = load(job_id)
    if job["state"] == "CANCELLED":
        return
    job.update(fields)
    save(job)


def parse_directives(script: str) -> dict[str, str]:
    out = {}
    for m in re.finditer(r"^#SBATCH --([\w-]+)(?:=(.*))?$", script, re.M):
        out[m.group(1)] = m.group(2) if m.group(2) is not None else ""
    return out


def sbatch(args: list[str]) -> None:
    *opts, script_path = args
    script = Path(script_path).read_text()  # datatrove deletes its temporary script as soon as sbatch returns
    directives = parse_directives(script)
    counter = state_dir() / "next_id"
    job_id = str(int(counter.read_text()) if counter.exists() else 1001)
    counter.write_text(str(int(job_id) + 1))
    (state_dir() / "scripts").mkdir(exist_ok=True)
    saved = state_dir() / "scripts" / f"{job_id}.sh"
    saved.write_text(script)
    options = dict(o[2:].split("=", 1) for o in opts if o.startswith("--") and "=" in o)
    lo, hi, throttle = re.fullmatch(r"(\d+)-(\d+)(?:%(\d+))?", directives.get("array", "0-0")).groups()
    env = {}
    for item in options.get("export", "ALL").split(",")[1:]:
        k, v = item.split("=", 1)
        env[k] = v
    job = {"id": job_id, "name": directives.get("job-name", ""), "options": options, "directives": directives,
           "script": str(saved), "array": list(range(int(lo), int(hi) + 1)), "throttle": int(throttle or 0),
           "dependency": options.get("dependency", directives.get("dependency", "")), "env": env, "cwd": os.getcwd(),
           "state": "PENDING", "reason": "Dependency" if options.get("dependency") else "None",
           "submitted_at": time.time(), "started_at": None, "finished_at": None, "exit_codes": {}}
    save(job)
    subprocess.Popen([sys.executable, __file__, "_run", job_id], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(f"Submitted batch job {job_id}")


def dependencies_state(spec: str) -> str:
    """'ok' (may start), 'wait', or 'never' (an afterok dependency failed)."""
    verdict = "ok"
    for part in filter(None, spec.split(",")):
        kind, *ids = part.split(":")
        for dep in ids:
            state = load(dep)["state"]
            if state not in TERMINAL:
                verdict = "wait"
            elif kind == "afterok" and state != "COMPLETED":
                return "never"
    return verdict


def run_job(job_id: str) -> None:
    update(job_id, pid=os.getpid())  # the runner leads its own process group: scancel kills the group
    job = load(job_id)
    while (dep := dependencies_state(job["dependency"])) != "ok":
        if dep == "never":
            update(job_id, reason=NEVER)
            return  # stays pending, like Slurm without kill_invalid_depend
        time.sleep(0.1)
    update(job_id, state="RUNNING", reason="None", started_at=time.time())
    if job["name"] in os.environ.get("FAKE_SLURM_FAIL", "").split(","):
        update(job_id, state="FAILED", finished_at=time.time())
        return
    out_tpl = job["directives"].get("output", f"{state_dir()}/slurm-%A_%a.out")

    def element(index: int) -> int:
        env = {**os.environ, **job["env"], "SLURM_JOB_ID": f"{job_id}{index}", "SLURM_ARRAY_JOB_ID": job_id,
               "SLURM_ARRAY_TASK_ID": str(index), "SLURM_NODELIST": "localhost", "SLURM_JOB_NAME": job["name"]}
        env.pop("FAKE_SLURM_FAIL", None)
        out = Path(out_tpl.replace("%A", job_id).replace("%a", str(index)))
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w") as f:
            return subprocess.run(["bash", job["script"]], cwd=job["cwd"], env=env, stdout=f, stderr=subprocess.STDOUT).returncode

    parallel = min(MAX_PARALLEL, job["throttle"] or MAX_PARALLEL)
    with ThreadPoolExecutor(parallel) as pool:
        codes = dict(zip(job["array"], pool.map(element, job["array"]), strict=True))
    update(job_id, state="COMPLETED" if not any(codes.values()) else "FAILED", finished_at=time.time(),
           exit_codes={str(k): v for k, v in codes.items()})


def squeue(args: list[str]) -> None:
    fmt = "%i %T %r"
    for i, a in enumerate(args):
        if a in ("-o", "--format"):
            fmt = args[i + 1]
        elif a.startswith("--format="):
            fmt = a.split("=", 1)[1]
    for job in jobs():
        if job["state"] in ("PENDING", "RUNNING"):
            fields = {"%F": job["id"], "%i": job["id"], "%T": job["state"], "%r": job["reason"], "%j": job["name"]}
            print(re.sub(r"%[FiTrj]", lambda m, f=fields: f[m.group(0)], fmt))


def scancel(args: list[str]) -> None:
    for job_id in args:
        job = load(job_id)
        if job["state"] in TERMINAL:
            continue
        if job.get("pid"):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(job["pid"], signal.SIGKILL)
        job.update(state="CANCELLED", reason="None", finished_at=time.time())
        save(job)
    with (state_dir() / "scancel.log").open("a") as f:
        f.write(" ".join(args) + "\n")


def srun(args: list[str]) -> None:
    i = 0
    while args[i].startswith("-"):
        i += 2 if args[i] in ("-n", "-N", "-c") else 1
    os.execvp(args[i], args[i:])


def scontrol(args: list[str]) -> None:
    if args[:2] == ["show", "hostnames"]:
        print("localhost")


if __name__ == "__main__":
    cmd, rest = sys.argv[1], sys.argv[2:]
    {"sbatch": sbatch, "squeue": squeue, "scancel": scancel, "srun": srun, "scontrol": scontrol,
     "_run": lambda a: run_job(a[0])}[cmd](rest)
