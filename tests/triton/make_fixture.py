#!/usr/bin/env python3
"""Compiles tests/triton's Triton kernel into the fixture kgate checks as a CUBIN package.

    python3 tests/triton/make_fixture.py [OUT_DIR]   (default: tests/triton/softmax_rows)

Triton compiles ahead of time without a GPU or driver given a target (triton.compile with
GPUTarget("cuda", 90, 32)), so the fixture is made on any machine with the torch wheel's Triton.
It writes the CUBIN, the compiled kernel's metadata (metadata.json: num_warps, shared, the hidden
scratch parameters' sizes, the Triton version) and the TTGIR, whose tt.divisibility attributes are
the specialization the CUBIN assumes. kgate.json beside them, written by hand from the metadata,
describes the launch: block 32 x num_warps, dynamic shared memory `shared`, the visible arguments
and the two hidden scratch pointers Triton 3.6 appends (global, profile), passed as null (their
sizes are 0).
"""
import json
import os
import sys

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


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "softmax_rows")
    os.makedirs(out, exist_ok=True)
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n_cols": "i32", "x_row_stride": "i32",
                 "y_row_stride": "i32", "BLOCK": "constexpr"}
    # The specialization the JIT would pick for 16-byte aligned pointers and strides divisible by 16.
    attrs = {(i,): [["tt.divisibility", 16]] for i in (0, 1, 3, 4)}
    source = ASTSource(fn=softmax_rows, signature=signature, constexprs={"BLOCK": 1024}, attrs=attrs)
    kernel = triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
    with open(os.path.join(out, "softmax_rows.cubin"), "wb") as f:
        f.write(kernel.asm["cubin"])
    with open(os.path.join(out, "softmax_rows.ttgir"), "w") as f:
        f.write(kernel.asm["ttgir"])
    keep = ("name", "num_warps", "num_ctas", "shared", "global_scratch_size", "global_scratch_align",
            "profile_scratch_size", "profile_scratch_align", "launch_pdl", "launch_cooperative_grid",
            "arch", "triton_version", "hash")
    metadata = {k: v for k, v in kernel.metadata._asdict().items() if k in keep}
    metadata["signature"] = signature
    metadata["constexprs"] = {"BLOCK": 1024}
    metadata["divisibility_16"] = ["x_ptr", "y_ptr", "x_row_stride", "y_row_stride"]
    with open(os.path.join(out, "metadata.json"), "w") as f:
        json.dump(metadata, f, indent=2, sort_keys=True)
        f.write("\n")
    print(f"{out}: softmax_rows.cubin ({len(kernel.asm['cubin'])} bytes), metadata.json, softmax_rows.ttgir "
          f"(Triton {triton.__version__})")


if __name__ == "__main__":
    main()
