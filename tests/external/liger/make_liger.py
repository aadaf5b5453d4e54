#!/usr/bin/env python3
"""Liger-Kernel's RMSNorm, SwiGLU and RoPE forward kernels, compiled by Triton for the
specializations the library's own launchers ask for, and made kgate packages.

    python3 tests/external/liger/make_liger.py DEST [--mode cuda|cpu] [--kgate KGATE]

The library's files are the pinned ones (tests/external/fetch.sh: .thirdparty/external/liger),
imported unmodified: DEST/import/liger_kernel holds links to them and two empty __init__.py (the
package's own ops/__init__.py imports every op of the library and its other backends). Its one
third-party need beside torch and Triton, `packaging`, comes from .thirdparty/pydeps where it is
not installed (python3 -m pip install --target .thirdparty/pydeps packaging).

--mode cuda (a GPU): each launcher (rms_norm_forward, swiglu_forward, rope_forward) runs on CUDA
tensors of each shape below, so Triton's JIT compiles and caches exactly what the library launches
(TRITON_CACHE_DIR=DEST/cache). --mode cpu (no GPU, no driver): the same calls, each kernel's
arguments bound as its launcher binds them and specialized by Triton's own rule
(native_specialize_impl, as JITFunction.run does), compiled by triton.compile for sm_90 into the
same cache. Either way DEST/jit/<label>/ keeps each entry's CUBIN, metadata and TTGIR, and
DEST/<kernel>.kgate-triton.json is the spec kgate-triton-pack turns into DEST/pkg/<kernel>.

The specializations: bf16, the llama casting mode (offset 0), rows of 2048 (BLOCK_SIZE 2048, 8
warps) and 4096 (BLOCK_SIZE 4096, 8 warps) with and without the :16 assumptions (a row length that
is no multiple of 16); SwiGLU's intermediate sizes 11008 and 14336 (n_cols is a constexpr: one
kernel each); RoPE for Llama-3-8B's heads (32 q, 8 kv, head_dim 128, batch 1) at a sequence length
that is a multiple of 16, at one that is not, and at 1 (decoding: Triton makes `sl` a constant).
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
PINNED = os.path.join(ROOT, ".thirdparty", "external", "liger")
FILES = ["src/liger_kernel/ops/rms_norm.py", "src/liger_kernel/ops/swiglu.py",
         "src/liger_kernel/ops/rope.py", "src/liger_kernel/ops/utils.py",
         "src/liger_kernel/utils.py"]


def import_dir(dest):
    """DEST/import/liger_kernel: links to the pinned files, empty package __init__s."""
    root = os.path.join(dest, "import")
    shutil.rmtree(root, ignore_errors=True)
    for f in FILES:
        src = os.path.join(PINNED, f)
        if not os.path.isfile(src):
            sys.exit(f"make_liger.py: {src} is missing: run tests/external/fetch.sh first")
        link = os.path.join(root, f[len("src/"):])
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(src, link)
    for pkg in ("liger_kernel", "liger_kernel/ops"):
        open(os.path.join(root, pkg, "__init__.py"), "w").close()
    return root


# The calls: (label, kernel, launcher, its arguments).
def calls(torch, device):
    bf = torch.bfloat16

    def t(*shape, dtype=bf):
        return torch.randn(*shape, dtype=dtype, device=device) if device == "cuda" else torch.empty(
            *shape, dtype=dtype)

    out = []
    for n, label in ((2048, "2048"), (4096, "4096"), (2001, "2048_any"), (4001, "4096_any")):
        out.append((f"rms_norm_{label}", "rms_norm", (t(64, n), t(n), 1e-6, 0.0, "llama", None)))
    for n in (11008, 14336):
        out.append((f"swiglu_{n}", "swiglu", (t(16, n), t(16, n), 1.0)))
    for s, label in ((64, "d16"), (37, "any"), (1, "decode")):
        q = t(1, 32, s, 128)  # (bsz, n_q_head, seq_len, head_dim), as the library's callers pass
        k = t(1, 8, s, 128)
        out.append((f"rope_{label}", "rope", (q, k, t(1, s, 128), t(1, s, 128))))
    return out


class SpecializingLaunch:
    """Stands in for kernel[grid](...) without a GPU: binds the arguments as JITFunction.run does,
    specializes them by Triton's own rule, and compiles for sm_90."""

    def __init__(self, fn):
        self.fn = fn

    def __getitem__(self, grid):
        return self.launch

    def launch(self, *args, **kwargs):
        import inspect
        import triton
        from triton._C.libtriton import native_specialize_impl
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource, make_backend
        target = GPUTarget("cuda", 90, 32)
        backend = make_backend(target)
        sig = inspect.signature(self.fn.fn)
        bound = sig.bind(*args, **{k: v for k, v in kwargs.items() if k in sig.parameters})
        bound.apply_defaults()
        options = {k: v for k, v in kwargs.items() if k not in sig.parameters}
        signature, constexprs, attrs = {}, {}, {}
        for i, (name, param) in enumerate(zip(sig.parameters, self.fn.params)):
            v = bound.arguments[name]
            if param.is_constexpr:
                signature[name] = "constexpr"
                constexprs[(i,)] = v
                continue
            ty, attr = native_specialize_impl(type(backend), v, False, True, True)
            signature[name] = ty
            if ty == "constexpr":
                constexprs[(i,)] = v
            if isinstance(attr, str) and attr:
                attrs[(i,)] = backend.parse_attr(attr)
        triton.compile(ASTSource(self.fn, signature, constexprs, attrs), target=target,
                       options=backend.parse_options(options).__dict__)


def compile_all(dest, mode):
    sys.path[:0] = [import_dir(dest), os.path.join(ROOT, ".thirdparty", "pydeps")]
    cache = os.path.join(dest, "cache")
    shutil.rmtree(cache, ignore_errors=True)
    os.environ["TRITON_CACHE_DIR"] = cache
    import torch
    import triton  # noqa: F401
    from liger_kernel.ops import rms_norm, rope, swiglu
    launchers = {"rms_norm": (rms_norm, "rms_norm_forward", "_rms_norm_forward_kernel"),
                 "swiglu": (swiglu, "swiglu_forward", "_swiglu_forward_kernel"),
                 "rope": (rope, "rope_forward", "_triton_rope")}
    jit = os.path.join(dest, "jit")
    shutil.rmtree(jit, ignore_errors=True)
    entries = {}
    for label, which, args in calls(torch, "cuda" if mode == "cuda" else "cpu"):
        module, launcher, kernel = launchers[which]
        before = set(glob.glob(os.path.join(cache, "*", kernel + ".json")))
        if mode == "cpu":
            real = getattr(module, kernel)
            setattr(module, kernel, SpecializingLaunch(real))
            try:
                getattr(module, launcher)(*args)
            finally:
                setattr(module, kernel, real)
        else:
            getattr(module, launcher)(*args)
            torch.cuda.synchronize()
        made = sorted(set(glob.glob(os.path.join(cache, "*", kernel + ".json"))) - before)
        if len(made) != 1:
            sys.exit(f"make_liger.py: {label}: {len(made)} new cache entries of {kernel} (expected 1)")
        entry = os.path.dirname(made[0])
        keep = os.path.join(jit, label)
        os.makedirs(keep)
        for ext in (".json", ".cubin", ".ttgir"):
            shutil.copyfile(os.path.join(entry, kernel + ext), os.path.join(keep, kernel + ext))
        meta = json.load(open(os.path.join(keep, kernel + ".json")))
        print(f"{label}: {kernel} num_warps={meta['num_warps']} shared={meta['shared']} "
              f"({os.path.getsize(os.path.join(keep, kernel + '.cubin'))} bytes)")
        entries[label] = keep
    return entries


def specs(dest):
    ops = os.path.join(ROOT, "tests", "external", "ops")
    lic = [os.path.join(PINNED, f) for f in ("LICENSE", "NOTICE")]
    common_desc = ("Liger-Kernel (linkedin/Liger-Kernel ead96b6, pinned in tests/external/sources.tsv), "
                   "compiled by Triton for the specializations its launcher asks for "
                   "(tests/external/liger/make_liger.py)")
    rms = {
        "format": "kgate-triton/1", "kernel": "_rms_norm_forward_kernel",
        "package": {
            "name": "liger_rms_norm", "version": "0.8.2", "op": "liger_rms_norm",
            "op_file": "liger_rms_norm.op.json",
            "description": common_desc + ": _rms_norm_forward_kernel, llama casting, bf16, rows of "
                           "1025 to 4096 (BLOCK_SIZE 2048 or 4096)",
            "symbols": {"B": ["x", 0], "N": ["x", 1]},
            "guard": {"dtypes": ["bf16"], "ranks": [2],
                      "shapes": {"B": {"min": 1, "max": 65535}, "N": {"min": 1025, "max": 4096}},
                      "layouts": ["contiguous", "strided", "offset"],
                      "require": ["stride_x_1 == 1", "stride_y_1 == 1"]}},
        "params": [{"name": "Y_ptr", "tensor": "y"}, {"name": "Y_row_stride", "stride": ["y", 0]},
                   {"name": "X_ptr", "tensor": "x"}, {"name": "X_row_stride", "stride": ["x", 0]},
                   {"name": "W_ptr", "tensor": "w"}, {"name": "W_row_stride", "stride": ["w", 0]},
                   {"name": "RSTD_ptr", "tensor": "rstd"},
                   {"name": "RSTD_row_stride", "stride": ["rstd", 0]},
                   {"name": "n_cols", "shape": "N"}, {"name": "eps", "scalar": "eps", "type": "f32"},
                   {"name": "offset", "scalar": "offset", "type": "f32"},
                   {"name": "casting_mode", "constexpr": True},
                   {"name": "elementwise_affine", "constexpr": True},
                   {"name": "BLOCK_SIZE", "constexpr": True}],
        "grid": ["B"],
        "specializations": [
            {"from": "jit/rms_norm_2048", "when": {"if": "N <= 2048"}},
            {"from": "jit/rms_norm_2048_any", "when": {"if": "N <= 2048"}},
            {"from": "jit/rms_norm_4096", "when": {"if": "N > 2048"}},
            {"from": "jit/rms_norm_4096_any", "when": {"if": "N > 2048"}}],
        "files": [os.path.join(ops, "liger_rms_norm.op.json")] + lic}
    swi = {
        "format": "kgate-triton/1", "kernel": "_swiglu_forward_kernel",
        "package": {
            "name": "liger_swiglu", "version": "0.8.2", "op": "liger_swiglu",
            "op_file": "liger_swiglu.op.json",
            "description": common_desc + ": _swiglu_forward_kernel, bf16, the intermediate sizes "
                           "11008 and 14336 (n_cols is a constexpr: a kernel each)",
            "symbols": {"T": ["a", 0], "N": ["a", 1]},
            "guard": {"dtypes": ["bf16"], "ranks": [2],
                      "shapes": {"T": {"min": 1, "max": 65535}, "N": {"min": 11008, "max": 14336}},
                      "layouts": ["contiguous"],
                      "require": ["N == 11008 || N == 14336"]}},
        "params": [{"name": "a_ptr", "tensor": "a"}, {"name": "b_ptr", "tensor": "b"},
                   {"name": "c_ptr", "tensor": "c"}, {"name": "stride", "stride": ["c", 0]},
                   {"name": "gate_multiplier", "scalar": "gate_multiplier", "type": "f32"},
                   {"name": "n_cols", "constexpr": True}, {"name": "BLOCK_SIZE", "constexpr": True}],
        "grid": ["T"],
        "specializations": [
            {"from": "jit/swiglu_11008", "when": {"if": "N == 11008"}},
            {"from": "jit/swiglu_14336", "when": {"if": "N == 14336"}}],
        "files": [os.path.join(ops, "liger_swiglu.op.json")] + lic}
    rope = {
        "format": "kgate-triton/1", "kernel": "_triton_rope",
        "package": {
            "name": "liger_rope", "version": "0.8.2", "op": "liger_rope",
            "op_file": "liger_rope.op.json",
            "description": common_desc + ": _triton_rope (forward), bf16, Llama-3-8B's heads (32 q, "
                           "8 kv, head_dim 128), batch 1 (bs is a constexpr)",
            "symbols": {"BS": ["q", 0], "S": ["q", 1], "HQ": ["q", 2], "HK": ["k", 2],
                        "D": ["q", 3]},
            "guard": {"dtypes": ["bf16"], "ranks": [4],
                      "shapes": {"BS": {"min": 1, "max": 1}, "S": {"min": 1, "max": 32768},
                                 "HQ": {"min": 32, "max": 32}, "HK": {"min": 8, "max": 8},
                                 "D": {"min": 128, "max": 128}},
                      "layouts": ["contiguous"]}},
        # q and k are rotated in place: their buffers are the outputs q_out and k_out.
        "params": [{"name": "q_ptr", "tensor": "q_out"},
                   {"name": "q_row_stride", "stride": ["q_out", 1]},
                   {"name": "k_ptr", "tensor": "k_out"},
                   {"name": "k_row_stride", "stride": ["k_out", 1]},
                   {"name": "cos", "tensor": "cos"}, {"name": "cos_row_stride", "stride": ["cos", 1]},
                   {"name": "sin", "tensor": "sin"}, {"name": "sin_row_stride", "stride": ["sin", 1]},
                   {"name": "sl", "shape": "S"}] +
                  [{"name": n, "constexpr": True} for n in
                   ("bs", "cos_bs", "n_qh", "n_kh", "hd", "pad_n_qh", "pad_n_kh", "pad_hd",
                    "BLOCK_SIZE", "BACKWARD_PASS")],
        "grid": ["BS * S"],
        "specializations": [{"from": "jit/rope_d16"}, {"from": "jit/rope_decode"},
                            {"from": "jit/rope_any"}],
        "files": [os.path.join(ops, "liger_rope.op.json")] + lic}
    names = {}
    for name, spec in (("rms_norm", rms), ("swiglu", swi), ("rope", rope)):
        path = os.path.join(dest, name + ".kgate-triton.json")
        json.dump(spec, open(path, "w"), indent=2)
        names[name] = path
    return names


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dest")
    p.add_argument("--mode", choices=("cuda", "cpu"), default=None)
    p.add_argument("--kgate", default=os.path.join(ROOT, "build", "bin", "kgate"))
    a = p.parse_args()
    dest = os.path.abspath(a.dest)
    os.makedirs(dest, exist_ok=True)
    mode = a.mode
    if mode is None:
        has_gpu = shutil.which("nvidia-smi") and subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True).returncode == 0
        mode = "cuda" if has_gpu else "cpu"
    compile_all(dest, mode)
    rc = 0
    for name, spec in specs(dest).items():
        out = os.path.join(dest, "pkg", name)
        r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "kgate_triton_pack.py"), spec,
                            out, "--kgate", a.kgate], capture_output=True, text=True)
        print(f"== {name}: kgate-triton-pack exit {r.returncode}")
        sys.stdout.write(r.stdout[-2000:] + r.stderr[-3000:])
        rc = rc or r.returncode
    return rc


if __name__ == "__main__":
    sys.exit(main())
