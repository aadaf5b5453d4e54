#!/usr/bin/env python3
"""Runs docs/ci.md's sharding example (the GitHub Actions YAML under "Many runners") as written.

Each job's steps run in order in a workspace of their own, under stub GitHub variables: a
`${{ matrix.shard }}` per matrix value, `if:` conditions as GitHub reads them, `actions/checkout`
as a workspace that links the repository's files (and its build), `upload-artifact` /
`download-artifact` as copies through a directory, and `run:` steps through the same bash GitHub
uses (`bash --noprofile --norc -eo pipefail`). The merged report must hold every kernel the shards
checked, each once, and the merge must exit as the worst shard did. Without a GPU (CUDA devices are
hidden here, so it takes the same minutes on any machine) the shards run the cpu backend.

usage: readme_sharding.py SOURCE_DIR BUILD_DIR OUT_DIR
"""
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys

import yaml

src, build, out = (os.path.abspath(a) for a in sys.argv[1:4])
page = open(os.path.join(src, "docs", "ci.md"), encoding="utf-8").read()
block = re.search(r"\*\*Many runners\.\*\*.*?```yaml\n(.*?)```", page, re.S)
if not block:
    sys.exit("FAIL: docs/ci.md has no ```yaml block after **Many runners.**")
jobs = yaml.safe_load(block.group(1))
assert set(jobs) == {"gate", "report"}, f"jobs: {sorted(jobs)}"

# The actions the example may use, at their current major versions (Node 24 releases).
CURRENT = {"actions/checkout": 6, "actions/upload-artifact": 7, "actions/download-artifact": 8}

shutil.rmtree(out, ignore_errors=True)
artifacts = os.path.join(out, "artifacts")
os.makedirs(artifacts)


def expand(text, ctx):
    def one(m):
        key = m.group(1).strip()
        if key not in ctx:
            raise SystemExit(f"FAIL: the example uses ${{{{ {key} }}}}, which this test does not stub")
        return str(ctx[key])
    return re.sub(r"\$\{\{(.*?)\}\}", one, text) if isinstance(text, str) else text


def checkout(ws):
    os.makedirs(ws)
    for entry in os.listdir(src):
        if entry in (".git", "reports", "shards", "build"):
            continue
        os.symlink(os.path.join(src, entry), os.path.join(ws, entry))
    os.symlink(build, os.path.join(ws, "build"))  # the checkout's build, reused rather than rebuilt


def run_job(name, ctx):
    job = jobs[name]
    ws = os.path.join(out, name + "".join(f"-{v}" for v in ctx.values()))
    env = dict(os.environ, CI="true", GITHUB_ACTIONS="true", GITHUB_WORKSPACE=ws,
               GITHUB_STEP_SUMMARY=os.path.join(out, f"summary-{os.path.basename(ws)}.md"),
               KGATE_BUILD_DIR=build, CUDA_VISIBLE_DEVICES="")
    failed, codes = False, []
    for step in job["steps"]:
        cond = expand(step.get("if", "success()"), ctx).strip()
        if cond not in ("always()", "success()", "failure()"):
            raise SystemExit(f"FAIL: {name}: condition {cond!r} is not stubbed here")
        if (cond == "success()" and failed) or (cond == "failure()" and not failed):
            continue
        if "uses" in step:
            action, _, major = step["uses"].partition("@")
            assert action in CURRENT, f"{name}: {action} is not an action this example should need"
            assert int(major.lstrip("v")) >= CURRENT[action], \
                f"{name}: {step['uses']}: use {action}@v{CURRENT[action]} (the current major, Node 24)"
            w = {k: expand(v, ctx) for k, v in (step.get("with") or {}).items()}
            if action == "actions/checkout":
                checkout(ws)
            elif action == "actions/upload-artifact":
                assert os.path.isdir(os.path.join(ws, w["path"])), f"{name}: nothing at {w['path']} to upload"
                shutil.copytree(os.path.join(ws, w["path"]), os.path.join(artifacts, w["name"]))
            else:
                for a in sorted(os.listdir(artifacts)):
                    if fnmatch.fnmatch(a, w["pattern"]):
                        shutil.copytree(os.path.join(artifacts, a), os.path.join(ws, w["path"], a))
            continue
        assert os.path.isdir(ws), f"{name}: a run: step before the checkout"
        cmd = expand(step["run"], ctx)
        print(f"==> {os.path.basename(ws)}: {cmd}", flush=True)
        rc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", cmd], cwd=ws, env=env,
                            stdout=open(os.path.join(out, os.path.basename(ws) + ".log"), "a"),
                            stderr=subprocess.STDOUT).returncode
        codes.append(rc)
        failed = failed or rc != 0
    return ws, codes


matrix = jobs["gate"]["strategy"]["matrix"]["shard"]
shard_codes, kernels = {}, []
for shard in matrix:
    ws, codes = run_job("gate", {"matrix.shard": shard})
    shard_codes[shard] = codes[-1]
    report = os.path.join(ws, "reports", f"shard-{shard}", "report.json")
    assert os.path.isfile(report), f"shard {shard}: no report (exit codes {codes}; see {ws}.log)"
    kernels += [k["name"] for k in json.load(open(report))["kernels"]]
    print(f"shard {shard}: exit {codes[-1]}, {len(json.load(open(report))['kernels'])} kernel(s)")
assert kernels, "no shard checked a kernel"
assert len(kernels) == len(set(kernels)), f"a kernel in two shards: {kernels}"

ws, codes = run_job("report", {})
merged = os.path.join(ws, "reports", "report.json")
assert os.path.isfile(merged), f"the report job wrote no merged report (exit codes {codes}; see {ws}.log)"
names = [k["name"] for k in json.load(open(merged))["kernels"]]
assert sorted(names) == sorted(kernels), f"merged {sorted(names)}, shards {sorted(kernels)}"
worst = [c for c in shard_codes.values() if c != 0]
expected = min(worst) if worst else 0  # 1 (incorrect) outranks 2 (slower), 3, 4
assert codes[-1] == expected, f"kgate merge exited {codes[-1]}, the shards {shard_codes}: expected {expected}"
print(f"readme_sharding: {len(matrix)} shards ({shard_codes}), merged {len(names)} kernel(s), merge exit {codes[-1]}: all passed")
