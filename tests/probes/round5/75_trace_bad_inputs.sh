# Probe: trace refusals: missing file, a directory, a .txt, non-UTF-8 source, syntax error, S99, empty file. One line, exit 2, no traceback.
cd "$OUT"
mkdir adir; echo 'x = 1  # trace: x' > a.txt
printf 'import torch\ny = torch.ones(2)  # trace: y\ns = "\xff\xfe"\n' > latin.py
printf 'import torch\ny = torch.ones(2  # trace: y\n' > syntax.py
printf 'import torch\ny = torch.ones(2)  # BREAKPOINT S99\n' > s99.py
: > empty.py
for f in missing.py adir a.txt latin.py syntax.py s99.py empty.py; do
  $PY -m transformer_trace trace "$f" --out "$OUT/o" > o.txt 2> e.txt; rc=$?
  echo "--- $f rc=$rc lines=$(cat o.txt e.txt | wc -l) tb=$(grep -c Traceback e.txt) :: $(cat e.txt o.txt | tail -2 | tr '\n' '|' | cut -c1-220)"
done
ls "$OUT/o" 2>/dev/null
