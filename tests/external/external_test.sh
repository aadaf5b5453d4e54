#!/usr/bin/env bash
# external_test.sh KGATE WORK_DIR: what tests/external does that needs no mirror and no GPU.
#  1. fetch.sh against a small bare repository made here: the pinned bytes arrive and --verify
#     accepts them; a wrong sha256, a missing mirror, a missing file and a malformed line each fail
#     (exit 1) naming the file with the expected and actual hash; a tampered copy fails --verify.
#  2. sources.tsv is well formed (every line LIB, OWNER/NAME, 40-hex commit, path, 64-hex sha256).
#  3. every op file of tests/external/ops loads (kgate --ops DIR list --ops lists each by name) and
#     every config names op files, libraries under .thirdparty/build and specs that kgate parses.
set -uo pipefail
kgate=${1:?usage: external_test.sh KGATE WORK_DIR}
work=${2:?usage: external_test.sh KGATE WORK_DIR}
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work" || fail "cannot make $work"

# 1. A mirror of owner/lib with one commit.
src=$work/src
mkdir -p "$src/dir" && git -C "$src" init -q && printf 'kernel bytes\n' > "$src/dir/a.cu" &&
  git -C "$src" add dir/a.cu && git -C "$src" -c user.name=t -c user.email=t@t commit -qm one || fail "git"
mkdir -p "$work/mirrors/owner+lib" && git clone -q --bare "$src" "$work/mirrors/owner+lib/repo" || fail "clone"
commit=$(git -C "$src" rev-parse HEAD)
sum=$(sha256sum "$src/dir/a.cu" | cut -d' ' -f1)
printf '# test\nlib\towner/lib\t%s\tdir/a.cu\t%s\n' "$commit" "$sum" > "$work/good.tsv"
KGATE_MIRRORS=$work/mirrors KGATE_EXTERNAL_SOURCES=$work/good.tsv "$here/fetch.sh" "$work/dest" > "$work/good.log" 2>&1 ||
  fail "a good manifest: $(cat "$work/good.log")"
cmp -s "$src/dir/a.cu" "$work/dest/lib/dir/a.cu" || fail "the fetched file differs from the pinned one"
KGATE_EXTERNAL_SOURCES=$work/good.tsv "$here/fetch.sh" --verify "$work/dest" > /dev/null 2>&1 || fail "--verify of a good copy"

expect_fail() {  # expect_fail WHAT MANIFEST PATTERN [fetch args]
  local what=$1 manifest=$2 pattern=$3; shift 3
  KGATE_MIRRORS=$work/mirrors KGATE_EXTERNAL_SOURCES=$manifest "$here/fetch.sh" "$@" > "$work/out.log" 2>&1
  local rc=$?
  [ "$rc" -eq 1 ] || fail "$what: exit $rc, expected 1: $(cat "$work/out.log")"
  grep -q -- "$pattern" "$work/out.log" || fail "$what: no '$pattern' in: $(cat "$work/out.log")"
  echo "ok: $what: $(grep -m1 -- "$pattern" "$work/out.log")"
}
zero=$(printf '0%.0s' $(seq 64))
printf 'lib\towner/lib\t%s\tdir/a.cu\t%s\n' "$commit" "$zero" > "$work/hash.tsv"
expect_fail "a wrong sha256" "$work/hash.tsv" "dir/a.cu: sha256 mismatch: expected $zero, got $sum" "$work/dest2"
[ ! -e "$work/dest2/lib/dir/a.cu" ] || fail "a file whose hash differs was written"
printf 'lib\tnobody/none\t%s\tdir/a.cu\t%s\n' "$commit" "$sum" > "$work/mirror.tsv"
expect_fail "a missing mirror" "$work/mirror.tsv" "no mirror of nobody/none" "$work/dest2"
printf 'lib\towner/lib\t%s\tdir/b.cu\t%s\n' "$commit" "$sum" > "$work/file.tsv"
expect_fail "a missing file" "$work/file.tsv" "has no file dir/b.cu" "$work/dest2"
printf 'lib\towner/lib\tHEAD\tdir/a.cu\t%s\n' "$sum" > "$work/form.tsv"
expect_fail "a commit that is not 40 hex digits" "$work/form.tsv" "expected LIB" "$work/dest2"
echo tampered >> "$work/dest/lib/dir/a.cu"
expect_fail "--verify of a tampered copy" "$work/good.tsv" "dir/a.cu: sha256 mismatch" --verify "$work/dest"

# 2. The real manifest's form (its hashes are checked by fetch.sh where the mirrors are).
python3 - "$here/sources.tsv" <<'PYFORM' || fail "sources.tsv has malformed lines (above)"
import re, sys
bad = 0
for n, line in enumerate(open(sys.argv[1]), 1):
    if not line.strip() or line.startswith("#"):
        continue
    f = line.rstrip("\n").split("\t")
    if len(f) != 5 or not re.fullmatch(r"[^/]+/[^/]+", f[1]) or not re.fullmatch(r"[0-9a-f]{40}", f[2]) \
            or not re.fullmatch(r"[0-9a-f]{64}", f[4]) or f[3].startswith("/") or ".." in f[3]:
        print(f"{sys.argv[1]}:{n}: {line.strip()}"); bad = 1
sys.exit(bad)
PYFORM
echo "ok: sources.tsv: $(grep -vc '^#' "$here/sources.tsv") pinned files"

# 3. Op files and configs.
"$kgate" --ops "$here/ops" list --ops > "$work/ops.txt" 2>&1 || fail "the op files do not load: $(tail -5 "$work/ops.txt")"
for f in "$here"/ops/*.op.json; do
  name=$(basename "$f" .op.json)
  grep -q "^$name .*tests/external/ops/$name.op.json" "$work/ops.txt" || fail "op $name is not listed from $f"
done
echo "ok: $(ls "$here"/ops/*.op.json | wc -l) op files load"
python3 - "$here" <<'PY' || fail "a config is malformed (above)"
import glob, json, os, re, sys
here = sys.argv[1]; bad = 0
ops = {os.path.basename(f)[:-len(".op.json")] for f in glob.glob(os.path.join(here, "ops", "*.op.json"))}
builtin = {"silu_and_mul", "gelu", "gelu_tanh"}
for cfg in sorted(glob.glob(os.path.join(here, "*.kgate.json"))):
    c = json.load(open(cfg)); name = os.path.basename(cfg)
    if c.get("format") != "kgate-config/1": print(name, "format"); bad = 1
    for lib in c["torch_libraries"]:
        if not os.path.normpath(os.path.join(here, lib)).startswith(os.path.normpath(os.path.join(here, "../../.thirdparty/build"))):
            print(name, "library outside .thirdparty/build:", lib); bad = 1
    kernels = set(); groups = {}
    for spec in c["torch_ops"]:
        m = re.match(r"^(cpu/)?(\w+)::(\w+)=(\w+)(,.*)?$", spec)
        if not m or m.group(4) not in ops | builtin: print(name, "spec:", spec); bad = 1; continue
        entries = [m.group(4)] + [e for e in (m.group(5) or "").split(",") if e]
        groups.setdefault(f"{m.group(2)}.{m.group(3)}" + (".cpu" if m.group(1) else ""), []).append(entries)
    for base, specs in groups.items():  # one op given several times: named by what sets each apart
        for entries in specs:
            own = [e for e in entries if len(specs) > 1 and not all(e in other for other in specs)]
            kernels.add(base + (f"[{','.join(own)}]" if own else ""))
    for k in c.get("kernels", {}):
        if k not in kernels: print(name, "a contract for no bound kernel:", k); bad = 1
sys.exit(bad)
PY
echo "ok: $(ls "$here"/*.kgate.json | wc -l) configs"
echo "1 passed, 0 failed"
