# Probe: `list` with no argument, an unknown catalogue, odd case, extra args; exit statuses and one-line errors.
cd "$OUT"
for a in "" vit VIT nonsense "gpt extra" "--help"; do
  echo "--- list [$a]"; $PY -m transformer_trace list $a > o.txt 2>e.txt; rc=$?
  echo "rc=$rc stdout_lines=$(wc -l < o.txt) stderr: $(tail -2 e.txt | tr '\n' '|')"; grep -c Traceback e.txt
done
