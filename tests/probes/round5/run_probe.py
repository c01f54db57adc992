"""Runs the probe's cases one at a time and prints what each did, for PROBE.md's table.

A case NN_name.py (or a folder NN_name/ holding main.py, or NN_name.ipynb) is copied twice into fresh folders under
/tmp/probe and run there as `python SCRIPT` and as `python -m transformer_trace trace SCRIPT --out /tmp/probe/out-NN`;
the runner prints both exit statuses, both stdouts (the tracer's summary line dropped), stderr's last lines, the files
each run left in its folder, and the trace's verdicts. A case NN_name.sh is a shell script run with PY (the venv's
python) and OUT (a fresh folder) set; it prints what it observed itself.

Header lines in a case: `# PROBE-ARGS: a b` (the script's arguments), `# PROBE-STDIN: text` (its standard input),
`# PROBE-TRACE-ARGS: --hit 2` (extra trace options), `# PROBE-NO-PYTHON` (only the trace is run).

Usage: .venv/bin/python tests/probes/round5/run_probe.py [NN ...]
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]  # the repository (this folder is tests/probes/round5)
PY = str(ROOT / ".venv" / "bin" / "python")
WORK = Path("/tmp/probe")
TIMEOUT = 120
SHELL_TIMEOUT = 420  # a shell case runs several traces


def header(text, key):
    for line in text.splitlines():
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
        if line.strip() == f"# {key}":
            return ""
    return None


def listing(folder):
    return sorted(
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )


def run(cmd, cwd, stdin, env=None, timeout=TIMEOUT):
    try:
        done = subprocess.run(cmd, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=timeout, env=env,
                              errors="replace")
        return done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as timed_out:
        def text(raw):
            return raw.decode(errors="replace") if isinstance(raw, bytes) else (raw or "")
        return "TIMEOUT", text(timed_out.stdout), text(timed_out.stderr)


def tail(text, n=4):
    return "\n      ".join(text.rstrip().splitlines()[-n:])


def verdicts(out):
    found = list(out.rglob("snapshots.json"))
    if not found:
        return "no snapshots.json"
    data = json.loads(found[0].read_text())
    parts = []
    for snap in data["snapshots"]:
        if not snap.get("captured"):
            continue
        check = snap.get("check") or {}
        status = check.get("status") or {True: "passed", False: "FAILED", None: "n/c"}[check.get("passed")]
        parts.append(f"{snap['label']}={status}")
    counts = data["outcome"]["counts"]
    return f"{counts} error={data['outcome']['error']!r}\n      " + " ".join(parts)


def run_case(case):
    number = case.name.split("_", 1)[0]
    print(f"=== {case.name}")
    out = WORK / f"out-{number}"
    shutil.rmtree(out, ignore_errors=True)
    if case.suffix == ".sh":
        out.mkdir(parents=True)
        env = dict(os.environ, PY=PY, OUT=str(out), CASES=str(HERE))
        rc, stdout, stderr = run(["bash", str(case)], out, None, env, SHELL_TIMEOUT)
        print(f"  rc={rc}\n  stdout: {tail(stdout, 30)}\n  stderr: {tail(stderr, 8)}")
        return
    script_name = "main.py" if case.is_dir() else case.name
    text = (case / "main.py" if case.is_dir() else case).read_text()
    args = (header(text, "PROBE-ARGS") or "").split()
    stdin = header(text, "PROBE-STDIN")
    stdin = None if stdin is None else stdin.replace("\\n", "\n")
    trace_args = (header(text, "PROBE-TRACE-ARGS") or "").split()
    results = {}
    for kind in ("python", "trace"):
        if kind == "python" and (header(text, "PROBE-NO-PYTHON") is not None or case.suffix == ".ipynb"):
            continue
        folder = WORK / f"{kind}-{number}"
        shutil.rmtree(folder, ignore_errors=True)
        if case.is_dir():
            shutil.copytree(case, folder)
        else:
            folder.mkdir(parents=True)
            shutil.copy(case, folder / case.name)
        before = set(listing(folder))
        if kind == "python":
            cmd = [PY, script_name, *args]
        else:
            cmd = [PY, "-m", "transformer_trace", "trace", script_name, "--out", str(out), *trace_args]
            if args:
                cmd += ["--", *args]
        rc, stdout, stderr = run(cmd, folder, stdin if stdin is None else stdin)
        if kind == "trace":
            stdout = "\n".join(l for l in stdout.splitlines() if not l.startswith("traced "))
        results[kind] = (rc, stdout, stderr, sorted(set(listing(folder)) - before))
        print(f"  [{kind}] rc={rc} new files={results[kind][3]}")
        print(f"      stdout: {tail(stdout, 6)}")
        print(f"      stderr: {tail(stderr, 6)}")
    if "python" in results:
        same = results["python"][1].rstrip() == results["trace"][1].rstrip()
        print(f"  stdout identical: {same}; files identical: {results['python'][3] == results['trace'][3]}")
    print(f"  verdicts: {verdicts(out)}")


def main():
    wanted = set(sys.argv[1:])
    cases = sorted(p for p in HERE.iterdir() if p.name[:2].isdigit() and (p.is_dir() or p.suffix in (".py", ".sh", ".ipynb")))
    for case in cases:
        if wanted and case.name.split("_", 1)[0] not in wanted:
            continue
        run_case(case)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
