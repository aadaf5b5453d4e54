#!/usr/bin/env bash
# Public kernel libraries kgate did not write, checked with their own registration code, on a GPU:
#   ci/gpu-external.sh OUT_DIR [build|check|all] [CONFIG...]
# build: steps 1-3 only; check: steps 2-5 with the kgate and libraries already built (a second call
# on the same machine, whose ignored build outputs stay); all (the default): every step. One call is
# at most 10 minutes: on a fresh machine, `build` first, then `check`.
# CONFIGs default to tests/external/*.kgate.json (each names its library's built .so, the op files of
# tests/external/ops/ and, per op, the contract read from the library's TORCH_CHECKs).
#
# The GPU machine has no network: carry what it needs. Here, where the mirrors are:
#   tests/external/fetch.sh                 # the pinned files, byte for byte, into .thirdparty/external
# then run with carry [".thirdparty", ".deps-bundle"] (.deps-bundle: ci/offline-bundle.sh's Debian
# packages, when the machine lacks them). Steps, each logged under OUT_DIR:
#   1. ci/setup.sh and ci/build.sh (skipped with KGATE_SKIP_BUILD=1 when build/bin/kgate exists)
#   2. tests/external/fetch.sh --verify: every carried file has its pinned sha256
#   3. the libraries: the repository keeps no recipe that builds them; .thirdparty/build-glue/build.sh,
#      when carried, builds them into .thirdparty/build, else (or with KGATE_EXTERNAL_GLUE=none) the
#      .so files must already be there
#   4. kgate check --config CONFIG per config (KGATE_EXTERNAL_ARGS adds options, e.g. --no-speed),
#      on the cpu backend when its ops are all cpu ones; the libraries load as shipped (kgate
#      loads libpython for an extension module, which leaves PyModule_Create2 undefined)
#   5. a table: library | op | bound | contract | verdict | speed vs eager
#   6. header-only kernels: each package under .thirdparty/packages (a kgate.json naming the pinned
#      headers' kernels by C++ name, with "build": nvcc; kept beside the fetched files, out of the
#      repository) is packed with kgate pack, which compiles it with nvcc, then checked
#   7. Triton kernels: tests/external/liger/make_liger.py compiles Liger-Kernel's RMSNorm, SwiGLU
#      and RoPE forward kernels through the library's own launchers (Triton's JIT on this GPU; it
#      needs `packaging`: python3 -m pip install --target .thirdparty/pydeps packaging, carried),
#      kgate-triton-pack makes each a package, kgate check checks it
# Then tests/external/repro/*.py reproduce the findings outside a contract one by one
# (python3 tests/external/repro/NAME.py; each says what it shows and exits 1 when it shows it).
set -uo pipefail
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
out=${1:?usage: ci/gpu-external.sh OUT_DIR [build|check|all] [CONFIG...]}
shift
phase=all
case "${1:-}" in build|check|all) phase=$1; shift ;; esac
mkdir -p "$out"
out=$(cd "$out" && pwd)
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=("$here"/tests/external/*.kgate.json)
build=${KGATE_BUILD_DIR:-$here/build}
kgate=$build/bin/kgate
timeout_s=${KGATE_EXTERNAL_TIMEOUT:-400}
deadline=${KGATE_DEADLINE:-560}  # a config that would start later than this (seconds) is skipped
read -r -a extra <<< "${KGATE_EXTERNAL_ARGS:-}"

if [ "$phase" = check ] || { [ "${KGATE_SKIP_BUILD:-0}" = 1 ] && [ -x "$kgate" ]; }; then
  [ -x "$kgate" ] || { echo "no $kgate: run ci/gpu-external.sh OUT build first"; exit 1; }
  echo "==> kgate: $kgate (build skipped)"
else
  "$here/ci/setup.sh" > "$out/setup.log" 2>&1 || { tail -20 "$out/setup.log"; echo "setup failed"; exit 1; }
  KGATE_BUILD_DIR=$build KGATE_JOBS=${KGATE_JOBS:-12} "$here/ci/build.sh" > "$out/build.log" 2>&1 ||
    { tail -30 "$out/build.log"; echo "kgate build failed"; exit 1; }
fi
"$here/tests/external/fetch.sh" --verify > "$out/verify.log" 2>&1 || { cat "$out/verify.log"; exit 1; }
tail -1 "$out/verify.log"
glue=${KGATE_EXTERNAL_GLUE:-$here/.thirdparty/build-glue/build.sh}  # "none": use the .so files as they are
if [ "$phase" != check ] && [ -x "$glue" ]; then
  echo "==> building the libraries with $glue"
  "$glue" "$here/.thirdparty/build" > "$out/libraries.log" 2>&1 || { tail -30 "$out/libraries.log"; echo "library build failed"; exit 1; }
fi
if [ "$phase" = build ]; then ls -l "$here"/.thirdparty/build/*.so 2>/dev/null; echo "built; now: ci/gpu-external.sh OUT check"; exit 0; fi
rows=()
for cfg in "${configs[@]}"; do
  name=$(basename "$cfg" .kgate.json)
  log=$out/$name.log
  if [ "$SECONDS" -gt "$deadline" ]; then
    echo "==> $name: skipped (at $SECONDS s, past KGATE_DEADLINE=$deadline s): run ci/gpu-external.sh OUT check $cfg"
    continue
  fi
  # A config whose ops are all cpu ones (cpu/NS::OP) runs on the cpu backend.
  backend=()
  if ! grep -q '"cuda/' "$cfg" && grep -q '"cpu/' "$cfg"; then backend=(--backend cpu); fi
  echo "==> $name: kgate check --config $cfg ${backend[*]} ${extra[*]}"
  timeout --kill-after=10 "$timeout_s" "$kgate" check --config "$cfg" "${backend[@]}" --out "$out/$name" "${extra[@]}" > "$log" 2>&1
  rc=$?
  # As shipped: an extension module (PyModule_Create2 undefined) loads with libpython, said in a warning.
  load=shipped
  grep -q "is a Python extension module" "$log" && load="shipped (+libpython)"
  echo "    exit $rc ($load)"
  rows+=("$name|$rc|$load|$out/$name/report.json|$log")
done

python3 - "${rows[@]}" <<'PY' | tee "$out/table.txt"
import json, sys
print(f"{'library':16s} | {'op':36s} | {'bound':22s} | {'contract':34s} | {'verdict':48s} | speed vs eager")
for row in sys.argv[1:]:
    name, rc, load, report, log = row.split("|")
    try:
        kernels = json.load(open(report))["kernels"]
    except Exception:
        err = [l.strip() for l in open(log, errors="replace") if "error" in l.lower()]
        print(f"{name:16s} | {'-':36s} | {'no (exit ' + rc + ')':22s} | {'-':34s} | {(err[-1] if err else 'no report')[:120]}")
        continue
    for k in kernels:
        c = k["correctness"]
        ct = c.get("contract")
        contract = "none stated" if not ct else "%s outside: %s refused, %s wrong" % (ct.get("outside", 0), ct.get("refused", 0), ct.get("wrong", 0))
        verdict = f"{k['outcome']} {c.get('passed', 0)}/{c.get('cases', 0)}"
        m = c.get("minimal") or (c.get("failures") or [None])[0]
        if m:
            verdict += f" minimal {m['case']['id']} ({m.get('rule')}): {m.get('message', '')[:80]}"
        eager = [s for s in k.get("speed", []) if s.get("baseline") == "eager"]
        speed = ", ".join(f"{s.get('ratio', 0):.2f}x ({s.get('decision')})" for s in eager) or "-"
        print(f"{name:16s} | {k['name']:36s} | {'yes (' + load + ')':22s} | {contract:34s} | {verdict:48s} | {speed}")
PY

# Header-only kernels through the nvcc route: kgate pack, then kgate check on the packed directory.
for pkg in "$here"/.thirdparty/packages/*/kgate.json; do
  [ -f "$pkg" ] || continue
  n=$(basename "$(dirname "$pkg")")
  if [ "$SECONDS" -gt "$deadline" ]; then echo "package $n: skipped (past KGATE_DEADLINE)"; continue; fi
  rm -rf "$out/packed/$n"; mkdir -p "$out/packed"
  if ! "$kgate" pack "$(dirname "$pkg")" "$out/packed/$n" > "$out/pack-$n.log" 2>&1; then
    echo "package $n: kgate pack failed: $(grep -m1 -E 'error|cannot' "$out/pack-$n.log" | cut -c1-220)"; continue
  fi
  timeout --kill-after=10 "$timeout_s" "$kgate" check "$out/packed/$n" --out "$out/pkg-$n" "${extra[@]}" > "$out/pkg-$n.log" 2>&1
  echo "package $n: exit $?: $(grep -E "^$n[[:space:]]" "$out/pkg-$n.log" | tail -1 | tr -s ' ')"
done

# Triton kernels as they ship (Liger-Kernel's RMSNorm, SwiGLU, RoPE): compiled by the library's own
# launchers on this GPU (Triton's JIT, a cache of their own), made packages by kgate-triton-pack,
# checked at the defaults.
if [ -d "$here/.thirdparty/external/liger" ] && [ "$SECONDS" -le "$deadline" ]; then
  python3 "$here/tests/external/liger/make_liger.py" "$out/liger" --kgate "$kgate" > "$out/liger-make.log" 2>&1
  echo "liger: make_liger.py exit $? ($(grep -c '^[a-z_0-9]*: _' "$out/liger-make.log") specializations compiled)"
  for n in rms_norm swiglu rope; do
    [ -f "$out/liger/pkg/$n/kgate.json" ] || { echo "liger $n: no package"; continue; }
    if [ "$SECONDS" -gt "$deadline" ]; then echo "liger $n: skipped (past KGATE_DEADLINE)"; continue; fi
    timeout --kill-after=10 "$timeout_s" "$kgate" check "$out/liger/pkg/$n" --out "$out/liger-$n" "${extra[@]}" > "$out/liger-$n.log" 2>&1
    echo "liger $n: exit $?"; sed -n '/^kernel /,/^reports:/p' "$out/liger-$n.log" | head -12
  done
fi

# The standalone reproductions, each against its library as built above.
for r in "$here"/tests/external/repro/*.py; do
  [ -f "$r" ] || continue
  n=$(basename "$r" .py)
  if [ "$SECONDS" -gt "$deadline" ]; then echo "repro $n: skipped (past KGATE_DEADLINE)"; continue; fi
  timeout --kill-after=10 120 python3 "$r" > "$out/repro-$n.log" 2>&1
  echo "repro $n: exit $? (1: it shows what it reproduces; $out/repro-$n.log)"
done
