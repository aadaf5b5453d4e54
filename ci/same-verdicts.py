#!/usr/bin/env python3
# ci/same-verdicts.py HEAD_REPORT BEFORE_REPORT OUT_DIR: two report.json of one command (kgate check
# --no-speed --seed 1) by two kgate builds, compared as tests/cli/check_golden.sh compares (what varies
# between runs stripped, numbers to 4 significant digits; the diff in OUT_DIR/same-verdicts.diff) and
# per kernel: outcome, case counts, worst margin, each failure's case id and margin. Exit 1 when a
# kernel differs.
import json, os, sys, difflib
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_clean import clean as clean_report  # what check_golden.sh strips; "source" too (two trees)
def clean(v): return clean_report(v, also_varies=("source",))
def sig(x):  # 4 significant digits, as text: "inf" and "nan" (written as strings) compare equal
    try:
        return f"{float(x):.4g}"
    except (TypeError, ValueError):
        return str(x)
def narrow(r):
    out = {}
    for k in r["kernels"]:
        c = k["correctness"]
        out[k["name"]] = (k["outcome"], c["cases"], c["passed"], c["failed"], c.get("fallback", 0),
                          sig(c.get('worst_margin', 0)),
                          tuple((f["case"]["id"], sig(f.get('margin', 0))) for f in c.get("failures", [])))
    return out
try:
    h, b = (json.load(open(p)) for p in sys.argv[1:3])
except (OSError, ValueError) as e:
    print(f"no report to compare: {e}")
    sys.exit(1)
hn, bn = narrow(h), narrow(b)
same = [n for n in hn if bn.get(n) == hn[n]]
print(f"kernels: head {len(hn)}, before {len(bn)}; identical outcome/cases/margins/failure ids: {len(same)}")
print(f"cases: head {sum(v[1] for v in hn.values())}, before {sum(v[1] for v in bn.values())}; "
      f"failed head {sum(v[3] for v in hn.values())}, before {sum(v[3] for v in bn.values())}")
for n in sorted(set(hn) | set(bn)):
    if hn.get(n) != bn.get(n):
        print(f"  DIFFERS {n}:\n    head   {hn.get(n)}\n    before {bn.get(n)}")
hc = json.dumps(clean(h), indent=1, sort_keys=True).splitlines()
bc = json.dumps(clean(b), indent=1, sort_keys=True).splitlines()
d = list(difflib.unified_diff(bc, hc, "before", "head", lineterm="", n=2))
open(sys.argv[3] + "/same-verdicts.diff", "w").write("\n".join(d) + "\n")
print(f"whole report (cleaned): {len(hc)} lines head, {len(bc)} before, {sum(1 for l in d if l[:1] in '+-' and l[:3] not in ('+++', '---'))} differing lines (same-verdicts.diff)")
sys.exit(0 if len(same) == len(hn) == len(bn) else 1)
