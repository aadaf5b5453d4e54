# A report.json without what varies between runs and machines (times, the command line, the commit,
# the worker sandbox, workers' output, the machine's versions), numbers to 4 significant digits
# (LibTorch's own summation order may move a margin's last digits), and given paths replaced by
# names. Shared by tests/cli/check_golden.sh (the golden report) and ci/same-verdicts.py (two builds
# compared).
VARIES = frozenset({
    "seconds", "started_at", "git_sha", "command", "sandbox", "worker_output", "worker_output_bytes",
    "worker_output_dropped_bytes", "worker_start_s", "worker_end_s", "worker_device", "worker_ordinal",
    "start_s", "end_s", "started_ahead_s", "device", "driver", "cuda", "torch", "kgate_version"})


def clean(v, replace=(), also_varies=()):
    """`v` cleaned: keys in VARIES (and `also_varies`) dropped, floats to 4 significant digits, and
    in strings each (path, name) pair of `replace` substituted in order."""
    varies = VARIES | frozenset(also_varies)

    def walk(x):
        if isinstance(x, dict):
            return {k: walk(y) for k, y in x.items() if k not in varies}
        if isinstance(x, list):
            return [walk(y) for y in x]
        if isinstance(x, float):
            return float(f"{x:.4g}")
        if isinstance(x, str):
            for path, name in replace:
                x = x.replace(path, name)
        return x

    return walk(v)
