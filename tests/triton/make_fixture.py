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


def compile_one(fn, divisible):
    attrs = {(i,): [["tt.divisibility", 16]] for i in divisible}
    source = ASTSource(fn=fn, signature=SIGNATURE, constexprs={"BLOCK": 1024}, attrs=attrs)
    return triton.compile(source, target=TARGET, options={"num_warps": 4})


def jit_entry(out, name, fn, divisible):
    """Compiles into a cache directory of its own and keeps what kgate-triton-pack reads."""
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TRITON_CACHE_DIR"] = cache
        compile_one(fn, divisible)
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


if __name__ == "__main__":
    main()
