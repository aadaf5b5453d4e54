#!/usr/bin/env python3
"""Checks .github/workflows/kgate.yml offline: it parses, every action is at a major version that runs
on Node 24 (the Node 20 ones are past their removal date), jobs that publish check runs have the
permission to, every job uses a venv (PEP 668), the GPU job compiles for the runner's GPUs and
gates on the cuda backend, gate runs on main are never cancelled, every run: step is valid bash,
and every file the workflow publishes is one the project's scripts write.

usage: workflow.py SOURCE_DIR
"""
import os
import re
import subprocess
import sys

import yaml

src = os.path.abspath(sys.argv[1])
path = os.path.join(src, ".github", "workflows", "kgate.yml")
wf = yaml.safe_load(open(path, encoding="utf-8"))
problems = []


def problem(msg):
    problems.append(msg)


# The first major of each action that declares `runs.using: node24`.
NODE24 = {"actions/checkout": 5, "actions/cache": 5, "actions/upload-artifact": 6,
          "actions/download-artifact": 7, "dorny/test-reporter": 2}

jobs = wf.get("jobs") or {}
if set(jobs) != {"cpu", "gpu"}:
    problem(f"jobs: expected cpu and gpu, found {sorted(jobs)}")
conc = wf.get("concurrency") or {}
if "refs/heads/main" not in str(conc.get("cancel-in-progress", "")):
    problem("concurrency.cancel-in-progress must leave runs on main alone (cancel only when github.ref != 'refs/heads/main')")
if (wf.get("permissions") or {}) != {"contents": "read"}:
    problem(f"permissions: the workflow's default must be contents: read, found {wf.get('permissions')}")

test_sh = open(os.path.join(src, "ci", "test.sh"), encoding="utf-8").read()
writes = {"reports/junit.xml": True, "reports/summary.md": True,
          "build/ctest-junit.xml": "--output-junit" in test_sh and "ctest-junit.xml" in test_sh}

for name, job in jobs.items():
    steps = job.get("steps") or []
    uses = [s["uses"] for s in steps if "uses" in s]
    for u in uses:
        action, _, ref = u.partition("@")
        if action not in NODE24:
            problem(f"{name}: {u}: not an action this workflow is known to need")
        elif not re.fullmatch(r"v\d+", ref) or int(ref[1:]) < NODE24[action]:
            problem(f"{name}: {u}: use {action}@v{NODE24[action]} or later (Node 24)")
    runs = "\n".join(s.get("run", "") for s in steps)
    if "python3 -m venv" not in runs and "PIP_BREAK_SYSTEM_PACKAGES" not in str(job.get("env")):
        problem(f"{name}: no venv (and no PIP_BREAK_SYSTEM_PACKAGES): pip install torch fails under PEP 668")
    if "ccache" not in str(job) or not any(u.startswith("actions/cache@") for u in uses):
        problem(f"{name}: no ccache directory cached")
    if not any(u.startswith("actions/cache@") and "pip" in str(s.get("with")) for s in steps for u in [s.get("uses", "")]):
        problem(f"{name}: the torch wheel (pip's cache) is not cached")
    if any(u.startswith("dorny/test-reporter@") for u in uses):
        if (job.get("permissions") or {}).get("checks") != "write":
            problem(f"{name}: publishes test results as check runs but lacks permissions: checks: write")
        for s in steps:
            if s.get("uses", "").startswith("dorny/test-reporter@"):
                p = (s.get("with") or {}).get("path", "")
                if not writes.get(p):
                    problem(f"{name}: publishes {p}, which no project script writes")
                if s.get("if") != "always()":
                    problem(f"{name}: publishing {p} must run if: always() (failures are what it is for)")
    for i, s in enumerate(steps):
        if "run" not in s:
            continue
        script = re.sub(r"\$\{\{.*?\}\}", "X", s["run"])
        r = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
        if r.returncode != 0:
            problem(f"{name}: step {i} ({s.get('name', '-')}): not valid bash: {r.stderr.strip()}")

gpu = jobs.get("gpu", {})
gpu_runs = "\n".join(s.get("run", "") for s in gpu.get("steps", []))
if "compute_cap" not in gpu_runs or "KGATE_CUDA_ARCHS" not in gpu_runs:
    problem("gpu: KGATE_CUDA_ARCHS is not read from the runner's GPUs (nvidia-smi --query-gpu=compute_cap)")
gate = [s for s in gpu.get("steps", []) if "ci/gate.sh" in s.get("run", "")]
if not gate or (gate[0].get("env") or {}).get("KGATE_EXPECT_GPU") != "1" or (gate[0].get("env") or {}).get("KGATE_REQUIRE_SANDBOX") != "1":
    problem("gpu: the gate step must set KGATE_EXPECT_GPU=1 and KGATE_REQUIRE_SANDBOX=1")
# Pairing with the base of the event (ci/kgate-pr.sh: a pull request against its merge commit's first
# parent (fetch-depth 2), a push against github.event.before, a new branch against its merge base).
if gate:
    run = gate[0].get("run", "")
    if "--against-event" not in run:
        problem("gpu: the gate step must pass --against-event (the event's base, found by ci/kgate-pr.sh)")
    checkout = [s for s in gpu.get("steps", []) if str(s.get("uses", "")).startswith("actions/checkout")]
    if not checkout or (checkout[0].get("with") or {}).get("fetch-depth") != 2:
        problem("gpu: the checkout must fetch 2 commits (fetch-depth: 2) for the merge commit's first parent")
# The Debian package: built and tested by ci/test.sh (ci/package.sh), uploaded by the CPU job.
cpu_steps = jobs.get("cpu", {}).get("steps", [])
deb = [s for s in cpu_steps if str(s.get("uses", "")).startswith("actions/upload-artifact")
       and (s.get("with") or {}).get("name") == "kgate-deb"]
if not deb or "build/deb/" not in str((deb[0].get("with") or {}).get("path", "")):
    problem("cpu: the job must upload the Debian package (kgate-deb, build/deb/kgate_*_amd64.deb)")
if "ci/package.sh" not in test_sh or "--test" not in test_sh:
    problem("ci/test.sh must build the Debian package (ci/package.sh) and test it (ci/package.sh --test)")
if "github.event.pull_request.head.repo.full_name == github.repository" not in str(gpu.get("if", "")):
    problem("gpu: self-hosted GPU runners must not run pull requests from forks")

# The kgate-pr action: composite; its inputs reach the scripts as environment variables, never spliced
# into a run: script; the scripts it runs exist and are valid bash.
action_dir = os.path.join(src, ".github", "actions", "kgate-pr")
action = yaml.safe_load(open(os.path.join(action_dir, "action.yml"), encoding="utf-8"))
if (action.get("runs") or {}).get("using") != "composite":
    problem("actions/kgate-pr: runs.using must be composite")
for i, s in enumerate((action.get("runs") or {}).get("steps") or []):
    if "${{" in s.get("run", ""):
        problem(f"actions/kgate-pr: step {i}: an expression in run: (pass inputs through env:)")
    for script in re.findall(r'\$GITHUB_ACTION_PATH/([\w.-]+)', s.get("run", "")):
        f = os.path.join(action_dir, script)
        if not os.path.isfile(f):
            problem(f"actions/kgate-pr: step {i} runs {script}, which does not exist")
        elif subprocess.run(["bash", "-n", f], capture_output=True).returncode != 0:
            problem(f"actions/kgate-pr: {script} is not valid bash")
for name in ("kgate-version", "kgate-prefix", "base", "args", "require-base"):
    if name not in (action.get("inputs") or {}):
        problem(f"actions/kgate-pr: no input {name}")
# The release: the Debian package attached to a v* tag's release, the only place with contents: write.
rel = yaml.safe_load(open(os.path.join(src, ".github", "workflows", "release.yml"), encoding="utf-8"))
rel_text = open(os.path.join(src, ".github", "workflows", "release.yml"), encoding="utf-8").read()
if "ci/package.sh" not in rel_text or "gh release" not in rel_text or "kgate_" not in rel_text:
    problem("release.yml: must build the Debian package (ci/package.sh) and attach it with gh release")
if (rel.get("permissions") or {}) != {"contents": "write"}:
    problem(f"release.yml: permissions must be contents: write alone, found {rel.get('permissions')}")

for p in problems:
    print("FAIL:", p)
if problems:
    sys.exit(1)
print(f"workflow: {len(jobs)} jobs, {sum(len(j.get('steps', [])) for j in jobs.values())} steps: all checks passed")
