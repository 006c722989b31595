#!/usr/bin/env python3
"""tests/summarize.py: sum test counts over every suite that scripts/test.sh ran.

Reads meson's testlog JSON files (one per build configuration) and the
conformance logs in LOGDIR. A Check executable counts each of its checks
("NN%: Checks: N, Failures: F, Errors: E"); a runner that prints
"N passed, N failed, N skipped" counts those; any other test counts as one.
A test that failed without reporting a failure count (a crash, a leak found
by valgrind) counts one failure more. Prints a table and the closing line."""
import json
import os
import re
import sys

CHECK = re.compile(r"^\s*\d+%: Checks: (\d+), Failures: (\d+), Errors: (\d+)", re.M)
COUNTS = re.compile(r"^(?:\w+: )?(\d+) passed, (\d+) failed(?:, (\d+) skipped)?\s*$", re.M)


def count_output(out):
    p = f = s = 0
    found = False
    for m in CHECK.finditer(out):
        n, fl, er = map(int, m.groups())
        p += n - fl - er
        f += fl + er
        found = True
    if not found:
        for m in COUNTS.finditer(out):
            p += int(m.group(1))
            f += int(m.group(2))
            s += int(m.group(3) or 0)
            found = True
    return found, p, f, s


def main():
    logdir = sys.argv[1]
    rows = []
    total = [0, 0, 0]
    for config in ("gcc", "asan", "valgrind"):
        path = os.path.join(logdir, config + ".json")
        if not os.path.exists(path):
            rows.append((config, "(did not run)", 0, 1, 0))
            total[1] += 1
            continue
        with open(path) as fh:
            for line in fh:
                t = json.loads(line)
                out = t.get("stdout", "") or ""
                found, p, f, s = count_output(out)
                ok = t.get("result") in ("OK", "EXPECTEDFAIL")
                skipped = t.get("result") == "SKIP"
                if not found:
                    p, f, s = (1, 0, 0) if ok else ((0, 0, 1) if skipped else (0, 1, 0))
                elif not ok and f == 0:
                    f = 1
                rows.append((config, t["name"], p, f, s))
                total[0] += p
                total[1] += f
                total[2] += s
    for fname in ("fuzz-summary.txt", "conformance.txt"):
        path = os.path.join(logdir, fname)
        if not os.path.exists(path):
            continue
        with open(path) as fh:
            text = fh.read()
        for m in re.finditer(r"^(CONFORMANCE|FUZZ) (\S+): (\d+) passed, (\d+) failed, (\d+) skipped",
                             text, re.M):
            p, f, s = int(m.group(3)), int(m.group(4)), int(m.group(5))
            rows.append((m.group(1).lower(), m.group(2), p, f, s))
            total[0] += p
            total[1] += f
            total[2] += s
    width = max(len(r[1]) for r in rows) if rows else 10
    print(f"{'config':<12} {'suite':<{width}} {'passed':>7} {'failed':>7} {'skipped':>8}")
    for c, n, p, f, s in rows:
        print(f"{c:<12} {n:<{width}} {p:>7} {f:>7} {s:>8}")
    print(f"{total[0]} passed, {total[1]} failed, {total[2]} skipped")
    return 0 if total[1] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
