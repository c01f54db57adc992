# Probe: --out onto a file, --junit onto a non-JUnit file of the user's (must be kept), --timeout abc with --junit, --hit 0.
cd "$OUT"
printf 'import torch\ny = torch.ones(2)  # trace: y\n' > m.py
echo precious > notes.xml; echo file > outfile
run() { $PY -m transformer_trace trace "$@" > o.txt 2> e.txt; echo "rc=$? :: $(cat e.txt o.txt | tail -1 | cut -c1-200) tb=$(grep -c Traceback e.txt)"; }
echo "--- out onto file"; run m.py --out outfile
echo "--- junit onto own file"; run m.py --out o --junit notes.xml; cat notes.xml
echo "--- timeout abc"; run m.py --out o --timeout abc --junit j.xml; ls j.xml && $PY -c "import xml.etree.ElementTree as E;E.parse('j.xml');print('parses')"
echo "--- hit 0"; run m.py --out o --hit 0
echo "--- hit -1"; run m.py --out o --hit -1
echo "--- name with slash"; run m.py --out o --name '../escape'
ls; ls o 2>/dev/null
