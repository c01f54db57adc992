# Probe: --version / --help / unknown command / no command: exit statuses, one line, and time (no torch import).
cd "$OUT"
for a in --version --help "" bogus "trace" "class"; do
  s=$(date +%s.%N); $PY -m transformer_trace $a > o.txt 2> e.txt; rc=$?; t=$(echo "$(date +%s.%N) - $s" | bc)
  echo "--- [$a] rc=$rc t=${t}s tb=$(grep -c Traceback e.txt) :: $(cat o.txt e.txt | tail -1 | cut -c1-160)"
done
