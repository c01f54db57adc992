# Probe: --student with XML-hostile names; the JUnit file must parse and carry the name.
cd "$OUT"
cp "$CASES/61_gpt_bug_no_scale_einsum.py" m.py
for n in 'ü😀' $'ctrl\x01x' ']]>'; do  # 'a&b<c>"d"' and $'tab\there' were run in the first pass
  rm -f j.xml
  $PY -m transformer_trace trace m.py --out "$OUT/o" --name rep -q --student "$n" --junit j.xml >/dev/null 2>err.txt; rc=$?
  echo "--- [$(printf %q "$n")] rc=$rc err=$(tail -1 err.txt)"
  [ -f j.xml ] && $PY -c "
import sys, xml.etree.ElementTree as E
r=E.parse('j.xml').getroot(); s=r if r.tag=='testsuite' else r[0]
print('parses; suite name=', repr(s.get('name')), 'failures=', s.get('failures'))" 2>&1 | tail -1
done
