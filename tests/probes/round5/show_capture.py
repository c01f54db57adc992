"""Prints what a probe case's trace captured: label, variable, shape, dtype, first values, check detail, the overview's notes."""
import json
import sys
from pathlib import Path

for number in sys.argv[1:]:
    for found in Path(f"/tmp/probe/out-{number}").rglob("snapshots.json"):
        data = json.loads(found.read_text())
        print(f"== {number} {found.parent.name}")
        for snap in data["snapshots"]:
            check = snap.get("check") or {}
            print(f"  {snap['label']} {snap.get('variable')!r} captured={snap.get('captured')} shape={snap.get('shape')} "
                  f"dtype={snap.get('dtype')} first={str(snap.get('first'))[:80]} line={(snap.get('source') or {}).get('line')}"
                  f"\n      detail={str(check.get('detail'))[:300]} why={str(snap.get('why_not', snap.get('reason', '')))[:200]}")
        print("  outcome:", json.dumps({k: v for k, v in data["outcome"].items() if k not in ("recognised",)})[:900])
