#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Print the closing lines of a meson test run.

Reads meson's testlog.json files, prints each test's result with the
closing line of its own runner (Check's "100%: Checks: N, Failures: 0,
Errors: 0", or a script's "N passed, N failed"), then one line for all of
them: "N passed, N failed". Exits 1 when anything failed or nothing ran.
"""
import json
import re
import sys

CLOSING = re.compile(r"^(\d+%: Checks: \d+, Failures: \d+, Errors: \d+|"
                     r"(\w+: )?\d+ passed, \d+ failed.*)$")


def main(paths):
    passed = failed = skipped = 0
    for path in paths:
        build = path.split("/")[0]
        try:
            lines = open(path, encoding="utf-8").read().splitlines()
        except OSError as e:
            print(f"test-summary: {e}")
            failed += 1
            continue
        for line in lines:
            t = json.loads(line)
            out = (t.get("stdout") or "") + "\n" + (t.get("stderr") or "")
            closing = [m.group(1) for m in
                       (CLOSING.match(x.strip()) for x in out.splitlines()) if m]
            res = t["result"]
            name = f"{build}: {t['name']}"
            print(f"{res:8} {name:45} {closing[-1] if closing else ''}")
            if res == "OK":
                passed += 1
            elif res == "SKIP":
                skipped += 1
            else:
                failed += 1
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
