#!/usr/bin/env python3
"""kgate-triton-pack: a Triton kernel as it ships, made a kgate package.

    kgate-triton-pack SPEC.json OUT_DIR [--kgate KGATE] [--no-validate] [-q]

SPEC.json (format "kgate-triton/1") names the Triton kernel, maps each of its parameters, in the
kernel's own order, onto the op as any package's launch arguments are mapped, and lists the
compiled specializations to ship, each from

  - a JIT cache directory (~/.triton/cache/<key>/, as a run of the library left it): the CUBIN,
    the metadata JSON, and the TTGIR, whose `tt.func` signature says which parameters are still
    parameters and which the specialization assumed divisible by 16; or
  - the C source `python -m triton.tools.compile` wrote (name.<hash>_<suffix>.c): the CUBIN
    embedded as a hex array, the launch (`--grid`, num_warps, shared memory) and the
    specialization in the function name's suffix (`3d`: parameter 3 divisible by 16, `5c`: equal
    to 1). Its C types say i32/i64/u32/u64; a float parameter is written as `double` whatever its
    width, so it is taken as f32 (kgate validate checks every size against the CUBIN).

It writes OUT_DIR/kgate.json, each CUBIN byte for byte, and OUT_DIR/kgate-pack.json (every file's
SHA-256, the inputs and the Triton version and settings each CUBIN was compiled with), then runs
`kgate validate OUT_DIR`. Each specialization becomes a launch: block 32 x num_warps, the metadata's
shared memory (its limit raised where it is above 48 KiB, as Triton's launcher does), num_ctas as a
cluster, the two scratch pointers Triton appends (null, or a workspace where the kernel needs
scratch), and its assumptions (`tt.divisibility`, parameters specialized as 1) as the launch's
`assumes` and, for one specialization, as `guard.require`; several are dispatched by `when`, each
its own assumptions and the user's `when`, first match first. A cooperative or PDL launch gets
`"cooperative"` / `"pdl"`; tensor descriptors (TMA) are refused. Needs only Python 3 (no Triton, no
GPU): compiling is Triton's, checking is kgate's.
"""
import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile

FORMAT = "kgate-triton/1"
ARG_KINDS = ("tensor", "workspace", "shape", "stride", "attribute", "scalar")
# Triton scalar types -> the package's argument types.
SCALAR_TYPES = {"i32": "i32", "i64": "i64", "u32": "u32", "u64": "u64", "f32": "f32",
                "fp32": "f32", "f64": "f64", "fp64": "f64"}
C_SCALAR_TYPES = {"int32_t": "i32", "int64_t": "i64", "uint32_t": "u32", "uint64_t": "u64",
                  "float": "f32", "double": "f32"}  # (triton.tools.compile writes fp32 as double)


class SpecError(Exception):
    """A problem with the spec or an input, said with the file and field."""


def fail(where, message):
    raise SpecError(f"{where}: {message}")


def sha256(data):
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------------------------------
# Reading a compiled specialization

def split_top(text):
    """Splits at commas outside (), <>, {} and []."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "(<{[":
            depth += 1
        elif ch in ")>}]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def ttgir_params(text, kernel, where):
    """The kernel's parameters from a TTGIR/TTIR `tt.func`: [(name, type, divisible_by_16)]."""
    m = re.search(r"tt\.func\s+(?:public\s+)?@" + re.escape(kernel) + r"\(", text)
    if not m:
        fail(where, f"no `tt.func @{kernel}` (is this the IR of kernel {kernel!r}?)")
    depth, i = 1, m.end()
    while i < len(text) and depth:
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    params = []
    for p in split_top(text[m.end():i - 1]):
        pm = re.match(r"%(\w+)\s*:\s*(.+)$", p, re.S)
        if not pm:
            fail(where, f"cannot read the parameter {p[:80]!r}")
        name, rest = pm.group(1), pm.group(2)
        ty = re.split(r"\s+(?:\{|loc\()", rest, maxsplit=1)[0].strip()
        if "tt.nv_tma_desc" in rest or "tensordesc" in ty:
            fail(where, f"parameter {name} is a tensor descriptor (TMA), which kgate packages do "
                        "not launch yet")
        div = re.search(r"tt\.divisibility\s*=\s*(\d+)", rest)
        params.append((name, ty, int(div.group(1)) >= 16 and int(div.group(1)) % 16 == 0 if div
                       else False))
    return params


def read_jit(path, kernel, where):
    """A JIT cache directory's specialization of `kernel`."""
    meta_path = os.path.join(path, kernel + ".json")
    if not os.path.isfile(meta_path):
        # A cache root: the one directory below it that holds the kernel.
        found = sorted(d for d in (os.listdir(path) if os.path.isdir(path) else [])
                       if os.path.isfile(os.path.join(path, d, kernel + ".json")))
        if len(found) != 1:
            fail(where, f"{path} holds {len(found)} compiled specializations of {kernel} "
                        f"({', '.join(found[:6]) or 'none'}): name the cache directory of one")
        path = os.path.join(path, found[0])
        meta_path = os.path.join(path, kernel + ".json")
    meta = json.load(open(meta_path))
    name = meta.get("name", kernel)
    cubin_path = os.path.join(path, name + ".cubin")
    ir_path = next((os.path.join(path, name + ext) for ext in (".ttgir", ".ttir")
                    if os.path.isfile(os.path.join(path, name + ext))), None)
    if not os.path.isfile(cubin_path):
        fail(where, f"{path} has no {name}.cubin (a cache entry of another backend?)")
    if ir_path is None:
        fail(where, f"{path} has no {name}.ttgir or .ttir: the specialization is written only there")
    inputs = [meta_path, cubin_path, ir_path]
    params = ttgir_params(open(ir_path).read(), name, ir_path)
    return {
        "kind": "jit", "dir": path, "name": name, "cubin": open(cubin_path, "rb").read(),
        "params": [(n, "ptr" if t.startswith("!tt.ptr") else t, d) for n, t, d in params],
        "num_warps": meta["num_warps"], "num_ctas": meta.get("num_ctas", 1),
        "num_stages": meta.get("num_stages"), "shared": meta.get("shared", 0),
        "global_scratch": (meta.get("global_scratch_size", 0), meta.get("global_scratch_align", 1)),
        "profile_scratch": (meta.get("profile_scratch_size", 0), meta.get("profile_scratch_align", 1)),
        "launch_pdl": meta.get("launch_pdl", False),
        "cooperative": meta.get("launch_cooperative_grid", False),
        "tensordesc": meta.get("tensordesc_meta") or [],
        "arch": "sm_%s" % (meta.get("target", {}).get("arch") or str(meta.get("arch", "")).lstrip("sm")),
        "triton_version": meta.get("triton_version"), "hash": meta.get("hash"),
        "grid": None, "constants": {}, "inputs": inputs, "eq1": None,
    }


def read_aot(path, kernel, where):
    """triton.tools.compile's C source of a specialization of `kernel`."""
    text = open(path).read()
    # "#define CUBIN_NAME <entry>_cubin" then "unsigned char CUBIN_NAME[size] = { 0x7f, ... };"
    named = re.search(r"#define CUBIN_NAME (\w+)_cubin\b", text)
    arr = re.search(r"unsigned char (?:CUBIN_NAME|(\w+)_cubin)\[(\d+)\]\s*=\s*\{([^}]*)\}", text)
    if not arr or not (named or arr.group(1)):
        fail(where, f"{path} holds no CUBIN array (expected triton.tools.compile's C source)")
    func = arr.group(1) or named.group(1)
    data = bytes(int(b, 16) for b in re.findall(r"0x([0-9a-fA-F]{2})", arr.group(3)))
    if len(data) != int(arr.group(2)):
        fail(where, f"{path}: the CUBIN array holds {len(data)} bytes, its declaration {arr.group(2)}")
    name = re.search(r'cuModuleGetFunction\(&\w+, \w+, "([^"]+)"\)', text)
    if not name or name.group(1) != kernel:
        fail(where, f"{path} compiles {name.group(1) if name else 'no kernel'!r}, not {kernel!r}")
    launch = re.search(r"cuLaunchKernel\(\w+, gX, gY, gZ, (\d+) \* (\d+), 1, 1, (\d+), stream", text)
    sig = re.search(r"CUresult " + re.escape(func) + r"\(CUstream stream,?\s*([^)]*)\)\s*\{", text)
    if not launch or not sig:
        fail(where, f"{path}: cannot read the launch or the entry point's signature")
    grid = [re.search(r"unsigned int g%s = (.*?);" % a, text).group(1).strip() for a in "XYZ"]
    params = []
    for p in split_top(sig.group(1)):
        ty, pname = p.rsplit(" ", 1)
        params.append((pname, "ptr" if ty == "CUdeviceptr" else C_SCALAR_TYPES.get(ty, ty), False))
    # The suffix: "<index>[c|d]" for every parameter of the kernel in order, constexpr ones
    # included ("0d1d23d4d5"): read against the parameter count (aot_marks).
    suffix = func.rsplit("_", 1)[1]
    doc = re.search(r"/\*\s*\[(.*?)\]\s*\*/", text, re.S)
    constants = {}
    for item in re.findall(r"'(\w+)=([^']*)'", doc.group(1) if doc else ""):
        constants[item[0]] = item[1]
    constants.pop("num_warps", None)  # (the launch says it)
    return {
        "kind": "aot", "file": path, "name": kernel, "cubin": data, "params": params,
        "suffix": suffix, "num_warps": int(launch.group(1)), "num_ctas": 1,
        "num_stages": constants.pop("num_stages", None), "shared": int(launch.group(3)),
        "global_scratch": (0, 1), "profile_scratch": (0, 1),  # (compile.py refuses scratch)
        "launch_pdl": False, "cooperative": False, "tensordesc": [], "arch": None,
        "triton_version": None, "hash": func.split("_")[-2], "grid": grid,
        "constants": constants, "inputs": [path],
    }


def aot_marks(suffix, count, where):
    """triton.tools.compile's suffix read for `count` parameters: {index: "c" | "d" | ""}."""
    marks, at = {}, 0
    for i in range(count):
        digits = str(i)
        if not suffix.startswith(digits, at):
            fail(where, f"the entry point's suffix {suffix!r} does not list parameter {i}: the spec's "
                        f"\"params\" ({count}) are not the kernel's")
        at += len(digits)
        marks[i] = suffix[at] if at < len(suffix) and suffix[at] in "cd" else ""
        at += len(marks[i])
    if at != len(suffix):
        fail(where, f"the entry point's suffix {suffix!r} lists more parameters than the spec's "
                    f"\"params\" ({count})")
    return marks


# ---------------------------------------------------------------------------------------------
# Making the launch

def arg_expression(param, where):
    """The integer expression an argument's value is, for assumptions and the grid."""
    if "shape" in param:
        e = param["shape"]
        return str(e) if isinstance(e, int) or re.fullmatch(r"\w+", str(e)) else f"({e})"
    if "stride" in param:
        t, d = param["stride"]
        if not isinstance(d, int) or d < 0:
            fail(where, "a stride's dimension must be a non-negative integer here (kgate names "
                        "the call's strides stride_T_D)")
        return f"stride_{t}_{d}"
    if "attribute" in param:
        return param["attribute"]
    if "scalar" in param and isinstance(param["scalar"], int):
        return str(param["scalar"])
    return None


def build_launch(spec, s_index, comp, cubin_file):
    where = f"specializations[{s_index}]"
    params = spec["params"]
    by_name = {p["name"]: p for p in params}
    compiled = [n for n, _, _ in comp["params"]]
    for n in compiled:
        if n not in by_name:
            fail(where, f"the compiled kernel takes parameter {n!r}, which \"params\" does not map "
                        f"(its parameters: {', '.join(compiled)})")
    if comp["tensordesc"]:
        fail(where, "the kernel takes tensor descriptors (TMA: tensordesc), which kgate packages "
                    "do not launch yet")
    args, assumes = [], []
    div = {n: d for n, _, d in comp["params"]}
    types = {n: t for n, t, _ in comp["params"]}
    if comp["kind"] == "aot":  # divisibility from the suffix, indexed over every parameter
        comp["marks"] = aot_marks(comp["suffix"], len(params), where)
        for i, p in enumerate(params):
            if comp["marks"].get(i) == "d" and p["name"] in div:
                div[p["name"]] = True
    for i, p in enumerate(params):
        name = p["name"]
        arg = {k: v for k, v in p.items() if k != "name"}
        if p.get("constexpr"):
            if name in div:
                fail(where, f"{name} is marked constexpr but is a parameter of the compiled kernel")
            continue
        kinds = [k for k in ARG_KINDS if k in arg]
        if len(kinds) != 1:
            fail(f"params[{i}] ({name})", "expected one of " + ", ".join(ARG_KINDS) +
                 ", or \"constexpr\": true")
        expr = arg_expression(p, f"params[{i}] ({name})")
        if name not in div:
            # Not a parameter of the CUBIN: Triton specialized it (an integer equal to 1).
            if kinds[0] in ("tensor", "workspace") or expr is None:
                fail(where, f"{name} is not a parameter of the compiled kernel: Triton specialized "
                            "it away (None or a constant), which kgate cannot launch as mapped")
            if comp["kind"] == "aot" and comp["marks"].get(i) != "c" and name not in comp["constants"]:
                fail(where, f"{name} is not a parameter of the compiled kernel, and its suffix does "
                            "not say it was specialized as 1")
            assumes.append(f"{expr} == 1")
            continue
        ty = types[name]
        if ty == "ptr":
            if kinds[0] not in ("tensor", "workspace"):
                fail(f"params[{i}] ({name})", "is a pointer in the compiled kernel: map it to a "
                                               "tensor or a workspace")
            if div[name] and kinds[0] == "tensor":
                assumes.append(f"align_{arg['tensor']} >= 16")
        else:
            if kinds[0] in ("tensor", "workspace"):
                fail(f"params[{i}] ({name})", f"is a {ty} in the compiled kernel, not a pointer")
            pkg_type = SCALAR_TYPES.get(ty)
            if pkg_type is None:
                fail(f"params[{i}] ({name})", f"has type {ty}, which a package argument cannot pass "
                                               "(i32, i64, u32, u64, f32, f64)")
            if "type" in arg and arg["type"] != pkg_type and comp["kind"] == "jit":
                fail(f"params[{i}] ({name})", f"says type {arg['type']}, the compiled kernel {ty}")
            arg.setdefault("type", pkg_type)
            if div[name]:
                if expr is None:
                    fail(where, f"{name} is assumed divisible by 16, but its mapping is no integer")
                if re.fullmatch(r"-?\d+", expr):
                    if int(expr) % 16:
                        fail(where, f"{name} is {expr}, not divisible by 16 as the CUBIN assumes")
                else:
                    assumes.append(f"{expr} % 16 == 0")
        args.append(arg)
    workspaces = []
    grid = spec.get("grid")
    if grid is None:
        if comp["grid"] is None:
            fail("grid", "needed: a JIT cache does not record the grid (the Python caller "
                         "computes it); write it as the package's grid expressions")
        names = {p["name"]: arg_expression(p, "grid") for p in params if not p.get("constexpr")}
        grid = []
        for g in comp["grid"]:
            out = re.sub(r"\b[A-Za-z_]\w*\b",
                         lambda m: names.get(m.group(0)) or m.group(0), g)
            grid.append(int(out) if re.fullmatch(r"\d+", out) else out)
    grid = list(grid) + [1] * (3 - len(grid))
    if comp["num_ctas"] != 1:
        grid[0] = f"({grid[0]}) * {comp['num_ctas']}"
    for which, (size, align) in (("global", comp["global_scratch"]),
                                 ("profile", comp["profile_scratch"])):
        if size:
            ws = f"triton_{which}_scratch_{s_index}"
            workspaces.append({"name": ws, "dtype": "u8",
                               "shape": [f"({grid[0]}) * ({grid[1]}) * ({grid[2]}) * {size}"]})
            args.append({"workspace": ws})
        else:
            args.append({"scalar": 0, "type": "u64"})
    launch = {"kernel": comp["name"], "grid": grid, "block": [32 * comp["num_warps"]],
              "shared_mem": comp["shared"], "args": args, "cubin": {comp["arch"]: cubin_file}}
    if comp["shared"] > 49152:
        launch["max_dynamic_shared_mem"] = comp["shared"]
    if comp["num_ctas"] != 1:
        launch["cluster"] = [comp["num_ctas"]]
    if comp["cooperative"]:
        launch["cooperative"] = True
    if comp["launch_pdl"]:
        launch["pdl"] = True
    if assumes:
        launch["assumes"] = assumes
    return launch, workspaces


def make_package(spec_path, out_dir):
    spec_dir = os.path.dirname(os.path.abspath(spec_path))
    spec = json.load(open(spec_path))
    if spec.get("format") != FORMAT:
        fail(spec_path, f'"format" must be "{FORMAT}"')
    known = ("format", "package", "kernel", "params", "grid", "arch", "specializations", "files")
    for key in spec:
        if key not in known:
            fail(spec_path, f'unknown key "{key}"; expected one of {", ".join(known)}')
    for key in ("package", "kernel", "params", "specializations"):
        if key not in spec:
            fail(spec_path, f'"{key}" is missing')
    if not isinstance(spec["specializations"], list) or not spec["specializations"]:
        fail(spec_path, '"specializations" must list at least one {"from": ...}')
    for i, sp in enumerate(spec["specializations"]):
        extra = [k for k in sp if k not in ("from", "when", "arch")] if isinstance(sp, dict) else []
        if not isinstance(sp, dict) or "from" not in sp or extra:
            fail(f"{spec_path}: specializations[{i}]",
                 f'expected {{"from": PATH}} with an optional "when" and "arch"'
                 + (f'; unknown key "{extra[0]}"' if extra else ""))
    for key in ("launches", "cubin", "sources", "fatbin", "ptx", "launch_defaults"):
        if key in spec["package"]:
            fail(spec_path, f'package.{key}: written by kgate-triton-pack from the specializations')
    os.makedirs(out_dir, exist_ok=True)
    pkg = dict(spec["package"])
    pkg.setdefault("format", "kgate-package/1")
    launches, files, record = [], [], []
    earlier = []  # the conditions of the launches before: first match first
    workspaces = list(pkg.get("workspace", []))
    n = len(spec["specializations"])
    for i, s in enumerate(spec["specializations"]):
        where = f"{spec_path}: specializations[{i}]"
        src = os.path.join(spec_dir, s["from"])
        comp = (read_aot if src.endswith(".c") else read_jit)(src, spec["kernel"], where)
        if comp["arch"] is None:
            comp["arch"] = s.get("arch") or spec.get("arch")
            if not comp["arch"]:
                fail(where, "triton.tools.compile's C source does not say its architecture: give "
                            "\"arch\" (such as \"sm_90\", the --target it was compiled for)")
        cubin_file = f"{spec['kernel']}.{i}.{comp['arch']}.cubin"
        with open(os.path.join(out_dir, cubin_file), "wb") as f:
            f.write(comp["cubin"])
        launch, ws = build_launch(spec, i, comp, cubin_file)
        workspaces += ws
        conds = []
        if "when" in s:
            user = s["when"]
            if "if" in user:
                conds.append(f"({user['if']})")
            if "layouts" in user:
                launch["when"] = {"layouts": user["layouts"]}
        if n > 1:
            conds += [f"({a})" for a in launch.get("assumes", [])]
            mine = " && ".join(conds) if conds else ""
            cond = " && ".join(([mine] if mine else []) + [f"!({e})" for e in earlier]) or "1"
            earlier.append(mine or "1")
            launch.setdefault("when", {})["if"] = cond
        elif conds:
            launch.setdefault("when", {})["if"] = " && ".join(conds)
        launches.append(launch)
        files.append(cubin_file)
        record.append({"from": os.path.relpath(src, spec_dir), "kind": comp["kind"],
                       "inputs": {os.path.relpath(p, spec_dir): sha256(open(p, "rb").read())
                                  for p in comp["inputs"]},
                       "cubin": cubin_file, "triton_version": comp["triton_version"],
                       "hash": comp["hash"], "arch": comp["arch"], "num_warps": comp["num_warps"],
                       "num_stages": comp["num_stages"], "num_ctas": comp["num_ctas"],
                       "shared": comp["shared"], "constants": comp["constants"],
                       "assumes": launch.get("assumes", [])})
    # The package's own CUBIN is the first launch's (a package names one); each launch its own.
    pkg["cubin"] = dict(launches[0]["cubin"])
    if workspaces:
        pkg["workspace"] = workspaces
    pkg["launches"] = launches
    if n > 1 and all(e != "1" for e in earlier):
        # Several specializations, each for some calls: a call none is for is outside the guard
        # (it runs the reference), never a call no launch runs.
        guard = pkg.setdefault("guard", {})
        covered = " || ".join(f"({e})" for e in earlier)
        guard["require"] = list(guard.get("require", [])) + [covered]
    if n == 1 and launches[0].get("assumes"):
        guard = pkg.setdefault("guard", {})
        require = list(guard.get("require", []))
        for a in launches[0]["assumes"]:
            if a not in require:
                require.append(a)
        guard["require"] = require
    text = json.dumps(pkg, indent=2) + "\n"
    with open(os.path.join(out_dir, "kgate.json"), "w") as f:
        f.write(text)
    for extra in spec.get("files", []):  # an op file, a LICENSE: copied as they are
        shutil.copyfile(os.path.join(spec_dir, extra), os.path.join(out_dir, os.path.basename(extra)))
        files.append(os.path.basename(extra))
    pack = {"format": "kgate-pack/1", "source": os.path.abspath(spec_path),
            "files": [{"path": "kgate.json", "from": "(kgate-triton-pack)",
                       "sha256": sha256(text.encode())}] +
                     [{"path": f, "from": "(kgate-triton-pack)",
                       "sha256": sha256(open(os.path.join(out_dir, f), "rb").read())} for f in files],
            "producer": {"tool": "kgate-triton-pack", "command": sys.argv,
                         "python": platform.python_version(), "spec_sha256":
                         sha256(open(spec_path, "rb").read()), "specializations": record}}
    with open(os.path.join(out_dir, "kgate-pack.json"), "w") as f:
        f.write(json.dumps(pack, indent=2) + "\n")
    return pkg


def find_kgate(given):
    if given:
        return given
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kgate")
    if os.access(here, os.X_OK):
        return here
    return shutil.which("kgate")


def main():
    parser = argparse.ArgumentParser(prog="kgate-triton-pack", description=__doc__.split("\n")[0])
    parser.add_argument("spec", help="the kgate-triton/1 spec (JSON)")
    parser.add_argument("out", help="the package directory to write (new, or an earlier one)")
    parser.add_argument("--kgate", help="the kgate that validates the package (default: beside "
                                        "this script, else on PATH)")
    parser.add_argument("--no-validate", action="store_true", help="write the package only")
    parser.add_argument("-q", "--quiet", action="store_true")
    a = parser.parse_args()
    out = os.path.abspath(a.out)
    if os.path.exists(out) and os.listdir(out) and not os.path.isfile(os.path.join(out, "kgate-pack.json")):
        print(f"kgate-triton-pack: {a.out} exists and is no earlier package: give a new directory",
              file=sys.stderr)
        return 4
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".kgate-triton-", dir=os.path.dirname(out))
    try:
        pkg = make_package(a.spec, tmp)
        if not a.no_validate:
            kgate = find_kgate(a.kgate)
            if not kgate:
                print("kgate-triton-pack: no kgate to validate with (--kgate, or kgate on PATH); "
                      "--no-validate writes the package unchecked", file=sys.stderr)
                return 4
            r = subprocess.run([kgate, "validate", tmp], capture_output=True, text=True)
            out_text = (r.stdout + r.stderr).replace(tmp, out)
            if r.returncode != 0:
                sys.stderr.write(out_text)
                print(f"kgate-triton-pack: kgate validate refused the package (exit "
                      f"{r.returncode}); {a.out} is unchanged", file=sys.stderr)
                return r.returncode
            if not a.quiet:
                sys.stdout.write(out_text)
        if os.path.exists(out):
            shutil.rmtree(out)
        os.rename(tmp, out)
        tmp = None
        if not a.quiet:
            print(f"kgate-triton-pack: {a.out}: {pkg['name']} {pkg.get('version', '')}, "
                  f"{len(pkg['launches'])} specialization(s) of {json.load(open(a.spec))['kernel']}")
        return 0
    except SpecError as e:
        print(f"kgate-triton-pack: {e}", file=sys.stderr)
        return 4
    finally:
        if tmp and os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
