"""Trace one fresh implementation as it is, then once per planted bug (each in a copy), and print what `trace` said.

    .venv/bin/python tests/trace_fresh/measure.py FOLDER [--only correct|B1|B2...]

Run from the worktree root. The copies go to /tmp/fresh-bugs/, the reports to /tmp/fresh-docs/ (never into docs/);
FRESH_TMP=/some/folder puts both under that folder instead (two measurements at once keep apart).
A bug is one exact text replacement in one upstream file, listed in FOLDER/planted_bugs.json with the snapshot(s) where
it is (`expected`): the bug is "named first" when the trace's first failing snapshot is one of them, and "named at
its own step" when one of them fails with evidence (a bug form or a property; the `form` a bug may list, where it does),
whatever failed before it: a round whose upstream code has a true red earlier still shows whether each bug is seen.
A causal-mask bug lists every step of the attention where it is observable, from the first on (the mask, where the
bug is in it; the masked scores; the probabilities): it is named first at whichever of them the trace judges first,
the masked scores being not checkable in some layouts. The `expected` steps are read from the repository's own record
(tests/trace_fresh/roundN/FOLDER/planted_bugs.json) where it lists the bug, a measured folder keeping an older copy.

A bug may carry, in that record, `"indistinguishable": "<why>"` (some correct implementation gives the same numbers
at every marked step: no verdict could be evidence) or `"unmarked": "<why>"` (the bug is on a line no marker covers
and no marked step's numbers can show it). Such a bug is still traced and counted in every total; the totals also
count the bugs with neither field apart (`*_observable`), the ones the acceptance's "named first" can fairly ask for.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TMP = Path(os.environ.get("FRESH_TMP", "/tmp"))
OUT = TMP / "fresh-docs"
COPIES = TMP / "fresh-bugs"


def own_step_evidence(snapshots: list[dict], expected: list[str]) -> dict[str, str]:
    """The bug's own snapshots (``expected``) that failed with evidence, each with the evidence's name (the bug form
    or the property that made the red verdict; "" where a failure had none)."""
    return {s["label"]: ((s.get("check") or {}).get("evidence") or {}).get("name") or "" for s in snapshots
            if s["label"] in expected and s.get("captured") and (s.get("check") or {}).get("passed") is False}


def named_at_own_step(found: dict[str, str], form: str | list[str] | None) -> bool:
    """Whether the bug is named at its own step: one of its snapshots failed with evidence, and with the bug's form
    where planted_bugs.json gives one (a list: any of them)."""
    forms = [form] if isinstance(form, str) else form
    return any(name and (forms is None or name in forms) for name in found.values())


# why a planted bug cannot be asked of the checks: the fields planted_bugs.json may give it
UNOBSERVABLE = ("indistinguishable", "unmarked")


def observable(bug: dict) -> bool:
    """Whether the bug's numbers at the marked steps can tell it from every correct form (neither field given)."""
    return not any(bug.get(field) for field in UNOBSERVABLE)


def summary(results: dict) -> dict:
    """The totals over the planted bugs: how many, named first, named at their own step; the same among the bugs
    that are observable, and how many carry each field that says why not."""
    bugs = [result for key, result in results.items() if isinstance(result, dict) and "bug" in result]
    seen = [b for b in bugs if observable(b["bug"])]
    return {"bugs": len(bugs), "named_first": sum(bool(b["named_first"]) for b in bugs),
            "named_at_own_step": sum(bool(b["named_at_own_step"]) for b in bugs),
            "bugs_observable": len(seen), "named_first_observable": sum(bool(b["named_first"]) for b in seen),
            "named_at_own_step_observable": sum(bool(b["named_at_own_step"]) for b in seen),
            **{field: sum(bool(b["bug"].get(field)) for b in bugs) for field in UNOBSERVABLE}}


def recorded_bugs(folder: Path) -> dict[str, dict]:
    """Each bug as the repository records it for ``folder`` (by its name, in any round)."""
    recorded = sorted(HERE.glob(f"round*/{folder.name}/planted_bugs.json"))
    return {bug["id"]: bug for bug in (json.loads(recorded[0].read_text()) if recorded else [])}


def recorded_expected(folder: Path) -> dict[str, list[str]]:
    """Each bug's `expected` steps as the repository records them for ``folder``."""
    return {name: bug["expected"] if isinstance(bug["expected"], list) else [bug["expected"]]
            for name, bug in recorded_bugs(folder).items()}


def trace(folder: Path, name: str, expected: tuple[str, ...] | list[str] = ()) -> dict:
    script = folder / "driver.ipynb" if (folder / "driver.ipynb").exists() else folder / "driver.py"
    command = [sys.executable, "-m", "transformer_trace", "trace", str(script), "--out", str(OUT), "--name", name,
               "--junit", str(TMP / f"fresh-{name}.xml")]
    run = subprocess.run(command, capture_output=True, text=True, timeout=900)
    terminal = [line for line in (run.stdout + run.stderr).splitlines() if "traced " in line or "first failing" in line
                or "error" in line.lower()]
    report = OUT / name / "snapshots.json"
    outcome = json.loads(report.read_text())["outcome"] if report.exists() else {}
    snapshots = json.loads(report.read_text())["snapshots"] if report.exists() else []
    failed = [f"{s['label']}: {s['check']['name']}: {s['check']['detail']}" for s in snapshots
              if s["captured"] and (s.get("check") or {}).get("passed") is False]
    first = (outcome.get("first_failure") or "").split(" ")[0]
    evidence = next(((s.get("check") or {}).get("evidence") for s in snapshots if s["label"] == first), None) or {}
    # every captured step no check could judge, with why: what the not-checkable share is made of
    unchecked = [f"{s['label']}: {s['check']['name']}: {s['check']['detail']}" for s in snapshots
                 if s["captured"] and (s.get("check") or {}).get("passed") is None]
    return {"exit": run.returncode, "terminal": terminal, "counts": outcome.get("counts"),
            "first_failure": outcome.get("first_failure"), "first_evidence": evidence.get("name"), "failed": failed,
            "unchecked": unchecked,
            **({"own_step": own_step_evidence(snapshots, list(expected))} if expected else {})}


def main() -> None:
    folder = (HERE / sys.argv[1]).resolve()
    only = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--only" else None
    results, recorded, record = {}, recorded_expected(folder), recorded_bugs(folder)
    if only in (None, "correct"):
        results["correct"] = trace(folder, folder.name.lower())
    for bug in json.loads((folder / "planted_bugs.json").read_text()) if (folder / "planted_bugs.json").exists() else []:
        if only not in (None, bug["id"]):
            continue
        copy = COPIES / f"{folder.name}-{bug['id']}"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(folder, copy)
        target = copy / bug["file"]
        text = target.read_text()
        if text.count(bug["old"]) != 1:
            raise SystemExit(f"{bug['id']}: the text to replace occurs {text.count(bug['old'])} times in {bug['file']}")
        target.write_text(text.replace(bug["old"], bug["new"]))
        expected = recorded.get(bug["id"]) or (bug["expected"] if isinstance(bug["expected"], list)
                                               else [bug["expected"]])
        # the record's word on whether the bug is observable, a measured folder's older copy lacking it
        why_not = {field: record.get(bug["id"], {}).get(field) or bug.get(field) for field in UNOBSERVABLE}
        bug = {**bug, "expected": expected, **{field: why for field, why in why_not.items() if why}}
        result = trace(copy, f"{folder.name}-{bug['id']}".lower(), expected)
        first = (result["first_failure"] or "").split(" ")[0]
        result["named_first"] = first in expected
        result["named_at_own_step"] = named_at_own_step(result["own_step"], bug.get("form"))
        result["observable"] = observable(bug)
        result["bug"] = bug
        results[bug["id"]] = result
    if any("bug" in result for result in results.values()):
        results["totals"] = summary(results)
    print(json.dumps(results, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
