# Probe: --timeout with a grandchild started through a shell (setsid-free) that ignores SIGTERM; nothing may outlive the trace.
cd "$OUT"
cat > hang.py <<'PY'
import subprocess, time, torch
subprocess.Popen(["bash", "-c", "trap '' TERM; sleep 318"])
y = torch.ones(2)  # trace: y
time.sleep(100)
PY
$PY -m transformer_trace trace hang.py --out "$OUT/o" --timeout 8 > o.txt 2> e.txt; echo "rc=$?"
echo "stderr: $(tail -2 e.txt | tr '\n' '|')"
sleep 3
echo "leftover:"; ps -eo pid,args | grep 'sleep 318' | grep -v grep
find o -name snapshots.json | head -1
