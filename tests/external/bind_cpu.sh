#!/usr/bin/env bash
# bind_cpu.sh KGATE OUT_DIR: what the external libraries show without a GPU, from the .so files under
# .thirdparty/build (built from tests/external/fetch.sh's files; the repository keeps no recipe).
#  - each *-cpu.kgate.json: kgate check on the cpu backend (correctness, no speed): real verdicts
#  - each CUDA config: its ops bound on the cpu backend (cpu/ before each spec, a copy of the config
#    under OUT_DIR) with one case each: an op that binds reaches the dispatcher, which has no CPU
#    kernel for it ("Could not run ... 'CPU' backend"); any other error is a binding failure.
# Prints library | op | bound | verdict; exit 0 when every op bound and every cpu check passed.
set -uo pipefail
kgate=${1:?usage: tests/external/bind_cpu.sh KGATE OUT_DIR}
out=${2:?usage: tests/external/bind_cpu.sh KGATE OUT_DIR}
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
mkdir -p "$out" && out=$(cd "$out" && pwd)
worst=0
run() {  # run NAME CONFIG ARGS...: kgate check (an extension module loads with libpython, said so)
  local name=$1 cfg=$2; shift 2
  "$kgate" check --backend cpu --config "$cfg" --no-speed --out "$out/$name" "$@" > "$out/$name.log" 2>&1
}
for cfg in "$here"/*.kgate.json; do
  name=$(basename "$cfg" .kgate.json)
  case "$name" in
    *-cpu) run "$name" "$cfg" || worst=1 ;;
    *)
      python3 - "$cfg" "$out/$name.bind.json" <<'PY'
import json, os, sys
src, dst = sys.argv[1], sys.argv[2]
c = json.load(open(src)); base = os.path.dirname(os.path.abspath(src))
c["op_files"] = [os.path.normpath(os.path.join(base, p)) for p in c.get("op_files", [])]
c["torch_libraries"] = [os.path.normpath(os.path.join(base, p)) for p in c["torch_libraries"]]
c["torch_ops"] = ["cpu/" + s for s in c["torch_ops"]]
c.pop("kernels", None)  # contracts name the CUDA kernels
json.dump(c, open(dst, "w"), indent=1)
PY
      run "$name" "$out/$name.bind.json" --cases 1 --family random ;;
  esac
done
python3 - "$out" "$here" <<'PY' || worst=1
import glob, json, os, sys
out, here = sys.argv[1], sys.argv[2]
bad = 0
print(f"{'library':18s} | {'op':34s} | {'bound':26s} | verdict")
for cfg in sorted(glob.glob(os.path.join(here, "*.kgate.json"))):
    name = os.path.basename(cfg)[:-len(".kgate.json")]
    log = open(os.path.join(out, name + ".log"), errors="replace").read()
    load = "yes (+libpython)" if "is a Python extension module" in log else "yes"
    try:
        kernels = json.load(open(os.path.join(out, name, "report.json")))["kernels"]
    except Exception:
        lines = [l.strip() for l in open(os.path.join(out, name + ".log"), errors="replace") if "error" in l]
        print(f"{name:18s} | {'-':34s} | {'no':26s} | {(lines[-1] if lines else 'no report')[:160]}"); bad = 1; continue
    for k in kernels:
        c = k["correctness"]
        if name.endswith("-cpu"):
            verdict = f"{k['outcome']} {c.get('passed', 0)}/{c.get('cases', 0)}"; bad |= k["outcome"] != "passed"
            bound = load
        else:
            msgs = [f.get("message", "") for f in c.get("failures", [])]
            ok = msgs and all("Could not run" in m and "'CPU' backend" in m for m in msgs)
            bound = load if ok else "no"
            verdict = "binds; no CPU kernel (run on a GPU)" if ok else (msgs[0][:160] if msgs else k["outcome"])
            bad |= not ok
        print(f"{name:18s} | {k['name']:34s} | {bound:26s} | {verdict}")
sys.exit(bad)
PY
exit $worst
