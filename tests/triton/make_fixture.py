#!/usr/bin/env python3
"""Compiles tests/triton's Triton kernels into the fixtures kgate checks as packages.

    python3 tests/triton/make_fixture.py [OUT_DIR]   (default: tests/triton)

Triton compiles ahead of time without a GPU or driver given a target (triton.compile with
GPUTarget("cuda", 90, 32)), so the fixtures are made on any machine with the torch wheel's Triton.

  softmax_rows/       the CUBIN of softmax_rows (BLOCK=1024, num_warps=4, both pointers and both row
                      strides divisible by 16), metadata.json and the TTGIR, with a kgate.json
                      written by hand from them (the hand route, tests/triton/triton_cli.sh)
  jit/<name>/         JIT cache entries as Triton writes them (TRITON_CACHE_DIR: the CUBIN, the
                      metadata JSON and the TTGIR; the other stages left out), the inputs of
                      kgate-triton-pack (*.kgate-triton.json beside this script):
    softmax_rows_d16    as softmax_rows/ (the JIT's pick for 16-byte aligned pointers, N % 16 == 0)
    softmax_rows_any    no divisibility assumed (any N, any alignment)
    softmax_rows_tail   no divisibility assumed, and its mask drops the row's last N % 16 elements
                        (the tail bug kgate must catch at its defaults)
    softmax_rows_pdl    as softmax_rows_any, compiled for a cooperative launch with programmatic
                        dependent launch (launch_cooperative_grid, launch_pdl)
  aot/softmax_rows.<hash>_0d1d23d4d5.c (and .h)
                      what `python -m triton.tools.compile` writes for softmax_rows with the signature
                      "*fp32:16, *fp32:16, i32, i32:16, i32:16, 1024" and 4 warps: Triton's own AOT
                      code (compile_kernel), run without a GPU by answering the two questions it asks
                      the active driver (the target, sm_90; and the C type of each argument, from
                      Triton's CUDA backend)
"""
import glob
import json
import os
import shutil
import sys
import tempfile

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def softmax_rows(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * x_row_stride + offs, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * y_row_stride + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_rows_tail(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < (n_cols // 16) * 16  # the bug: the last N % 16 elements of a row are dropped
    x = tl.load(x_ptr + row * x_row_stride + offs, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * y_row_stride + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n_cols": "i32", "x_row_stride": "i32",
             "y_row_stride": "i32", "BLOCK": "constexpr"}
TARGET = GPUTarget("cuda", 90, 32)


def compile_one(fn, divisible, **options):
    attrs = {(i,): [["tt.divisibility", 16]] for i in divisible}
    source = ASTSource(fn=fn, signature=SIGNATURE, constexprs={"BLOCK": 1024}, attrs=attrs)
    return triton.compile(source, target=TARGET, options={"num_warps": 4, **options})


def jit_entry(out, name, fn, divisible, **options):
    """Compiles into a cache directory of its own and keeps what kgate-triton-pack reads."""
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TRITON_CACHE_DIR"] = cache
        compile_one(fn, divisible, **options)
        found = glob.glob(os.path.join(cache, "*", fn.__name__ + ".json"))
        assert len(found) == 1, found
        entry = os.path.dirname(found[0])
        dest = os.path.join(out, "jit", name)
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(dest)
        for ext in (".json", ".cubin", ".ttgir"):
            shutil.copyfile(os.path.join(entry, fn.__name__ + ext),
                            os.path.join(dest, fn.__name__ + ext))
        # The metadata names the libdevice of the machine that compiled it: not an input.
        meta_path = os.path.join(dest, fn.__name__ + ".json")
        meta = json.load(open(meta_path))
        meta.pop("extern_libs", None)
        json.dump(meta, open(meta_path, "w"))
    print(f"{dest}: {fn.__name__} (divisible by 16: {sorted(divisible) or 'none'})")


def aot_entry(out):
    """triton.tools.compile's C source for softmax_rows, made without a driver."""
    from pathlib import Path

    from triton.backends.nvidia.driver import ty_to_cpp
    from triton.runtime.driver import driver
    from triton.tools.compile import CompileArgs, compile_kernel

    class TargetOnly:
        def map_python_to_cpp_type(self, ty):
            return ty_to_cpp(ty)

        def get_current_target(self):
            return TARGET

    dest = os.path.join(out, "aot")
    os.makedirs(dest, exist_ok=True)
    for old in glob.glob(os.path.join(dest, "*.[ch]")):  # (its .clang-format stays)
        os.remove(old)
    driver.set_active(TargetOnly())  # (the last step of main: nothing runs on a driver after it)
    # (target=None: compile.py's --target parses the architecture as a string, which Triton 3.6's
    # backend cannot compare; the active driver's target is an integer one.)
    name, files = compile_kernel(CompileArgs(
        path=os.path.abspath(__file__), kernel_name="softmax_rows",
        signature="*fp32:16, *fp32:16, i32, i32:16, i32:16, 1024", grid="1,1,1", target=None,
        num_warps=4, num_stages=3, out_name="softmax_rows",
        out_path=Path(os.path.join(dest, "softmax_rows"))))
    print(f"{dest}: {name} ({', '.join(os.path.basename(str(f)) for f in files)})")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    hand = os.path.join(out, "softmax_rows")
    os.makedirs(hand, exist_ok=True)
    kernel = compile_one(softmax_rows, (0, 1, 3, 4))
    with open(os.path.join(hand, "softmax_rows.cubin"), "wb") as f:
        f.write(kernel.asm["cubin"])
    with open(os.path.join(hand, "softmax_rows.ttgir"), "w") as f:
        f.write(kernel.asm["ttgir"])
    keep = ("name", "num_warps", "num_ctas", "shared", "global_scratch_size", "global_scratch_align",
            "profile_scratch_size", "profile_scratch_align", "launch_pdl", "launch_cooperative_grid",
            "arch", "triton_version", "hash")
    metadata = {k: v for k, v in kernel.metadata._asdict().items() if k in keep}
    metadata["signature"] = SIGNATURE
    metadata["constexprs"] = {"BLOCK": 1024}
    metadata["divisibility_16"] = ["x_ptr", "y_ptr", "x_row_stride", "y_row_stride"]
    with open(os.path.join(hand, "metadata.json"), "w") as f:
        json.dump(metadata, f, indent=2, sort_keys=True)
        f.write("\n")
    print(f"{hand}: softmax_rows.cubin ({len(kernel.asm['cubin'])} bytes), metadata.json, "
          f"softmax_rows.ttgir (Triton {triton.__version__})")
    jit_entry(out, "softmax_rows_d16", softmax_rows, (0, 1, 2, 3, 4))
    jit_entry(out, "softmax_rows_any", softmax_rows, ())
    jit_entry(out, "softmax_rows_tail", softmax_rows_tail, ())
    jit_entry(out, "softmax_rows_pdl", softmax_rows, (), launch_pdl=True, launch_cooperative_grid=True)
    aot_entry(out)


if __name__ == "__main__":
    main()
