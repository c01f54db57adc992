# Probe: `new` into a non-empty folder, onto an existing file, into a path under a file, with no argument.
cd "$OUT"
mkdir full && echo mine > full/keep.txt
echo x > afile
for arg in full afile afile/sub ""; do
  echo "--- new [$arg]"; $PY -m transformer_trace new "$arg" 2>&1 | tail -3; echo "rc=${PIPESTATUS[0]}"
done
echo "--- no arg"; $PY -m transformer_trace new 2>&1 | tail -3; echo "rc=${PIPESTATUS[0]}"
cat full/keep.txt; ls full; cat afile
