# Probe: `class` over student folders with hostile names; index.md escaped, class.csv formula cells neutralised, class.json valid.
cd "$OUT"
src=$(ls -d /tmp/probe/out-50/*/ | head -1)
for n in '<script>alert(1)<' '=cmd|calc!A1' 'ali ce' '"quote' 'x|pipe' '[md](javascript:alert(1))'; do
  mkdir -p "students/$n"; cp -r "$src"/. "students/$n/"
done
$PY -m transformer_trace class docs/class students/*/ 2>&1 | tail -3; echo "rc=${PIPESTATUS[0]}"
grep -c '<script>alert' docs/class/index.md || true
grep -o 'javascript:alert[^ ]*' docs/class/index.md | head -3
grep -n 'cmd' docs/class/class.csv | head -3
$PY -c "import json;d=json.load(open('docs/class/class.json'));print('json ok', type(d).__name__)"
