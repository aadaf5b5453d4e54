#!/usr/bin/env python3
"""Empty inputs given to kernels-community's activation ops (CUDA build, .thirdparty/build/_activation.so).

Their launch macros compute `num_tokens = input.numel() / input.size(-1)` and launch `grid(num_tokens)`
with no check of an empty tensor (the gated ops return early for num_tokens == 0, the element-wise ones
do not) and no check of the launch. Their TORCH_CHECKs refuse only non-contiguous tensors, so empty
tensors are inside what they accept. Each case runs in a child process and is compared with torch:
  rows0   x[0, N]: element-wise ops launch grid(0); is the launch error left for the next op to raise?
  cols0   x[B, 0]: numel / size(-1) is 0 / 0 on the host (SIGFPE?)
Prints one line per op and case; exits 1 when any op does something torch does not (raises, dies,
or leaves a CUDA error behind), 0 when every op behaves as torch does.
usage: python3 tests/external/repro/activation_empty.py [LIBRARY.so]
(the op namespace is the library's file name: _activation.so holds torch.ops._activation; with
KGATE_REPRO_DEVICE=cpu the same cases run on a CPU build such as _activation_cpu.so)
"""
import os
import subprocess
import sys

LIB = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "../../../.thirdparty/build/_activation.so")
GATED = ["silu_and_mul", "mul_and_silu", "gelu_and_mul", "gelu_tanh_and_mul", "fatrelu_and_mul"]
ELEMENTWISE = ["gelu_new", "gelu_fast", "gelu_quick", "gelu_tanh", "silu", "gelu"]

CHILD = r"""
import os, sys, torch
torch.ops.load_library(sys.argv[1])
op, case = sys.argv[2], sys.argv[3]
ns = getattr(torch.ops, os.path.basename(sys.argv[1]).split(".")[0])
dev = os.environ.get("KGATE_REPRO_DEVICE", "cuda")
sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
try:
    fn = getattr(ns, op)
except (AttributeError, RuntimeError):
    print("not in this library"); sys.exit(0)
gated = op.endswith("_mul") or op == "mul_and_silu"
rows, cols = (0, 64) if case == "rows0" else (4, 0)
x = torch.randn(rows, 2 * cols if gated else cols, device=dev, dtype=torch.float16)
out = torch.empty(rows, cols, device=dev, dtype=torch.float16)
args = (out, x, 0.0) if op == "fatrelu_and_mul" else (out, x)
try:
    fn(*args)
    sync()
except Exception as e:
    if "Could not run" in str(e):
        print("no kernel for this device in this library"); sys.exit(0)
    print("the op raised: " + str(e).splitlines()[0][:200]); sys.exit(3)
try:
    torch.relu(torch.ones(8, device=dev)).sum().item()  # an unrelated op after it
except Exception as e:
    print("the next, unrelated op raised: " + str(e).splitlines()[0][:200]); sys.exit(4)
print("ok (as torch: an empty output, nothing raised)")
"""


def main():
    if not os.path.isfile(LIB):
        print(f"no library {LIB}: build it first (ci/gpu-external.sh)")
        return 2
    bad = 0
    for case in ["rows0", "cols0"]:
        for op in GATED + ELEMENTWISE:
            p = subprocess.run([sys.executable, "-c", CHILD, LIB, op, case], capture_output=True, text=True)
            said = (p.stdout.strip().splitlines() or [""])[-1]
            if p.returncode < 0:
                said = f"the process died of signal {-p.returncode}"
            elif p.returncode not in (0, 3, 4):
                said = f"exit {p.returncode}: {(p.stderr.strip().splitlines() or [''])[-1][:160]}"
            bad |= p.returncode != 0
            print(f"{case:6s} {op:18s} {said}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
