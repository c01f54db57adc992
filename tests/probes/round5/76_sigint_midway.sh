# Probe: SIGINT to a trace while the script sleeps after a capture, with a child process: exit status, leftovers, processes.
cd "$OUT"
cat > slow.py <<'PY'
import subprocess, time, torch
child = subprocess.Popen(["sleep", "317"])
y = torch.ones(2)  # trace: y
time.sleep(60)
PY
$PY -m transformer_trace trace slow.py --out "$OUT/o" > o.txt 2> e.txt &
pid=$!
sleep 25
kill -INT $pid
wait $pid; echo "rc=$?"
echo "stderr: $(tail -3 e.txt | tr '\n' '|')"; echo "tb=$(grep -c Traceback e.txt)"
sleep 2
echo "leftover processes:"; ps -eo pid,args | grep -E 'sleep 317|slow.py|bootstrap' | grep -v grep
echo "files in cwd:"; ls -a
echo "report:"; ls o 2>/dev/null; find o -name snapshots.json | head -2
