# Probe: `class` with a broken snapshots.json (invalid JSON, a list, missing keys, binary) and with no report at all.
cd "$OUT"
mkdir -p s/bad s/list s/keys s/bin s/empty
echo '{"snapshots": [' > s/bad/snapshots.json
echo '[1,2,3]' > s/list/snapshots.json
echo '{"model": "x", "snapshots": [{"label": 5}]}' > s/keys/snapshots.json
head -c 200 /dev/urandom > s/bin/snapshots.json
for d in bad list keys bin empty; do
  echo "--- $d"; $PY -m transformer_trace class out-$d s/$d 2>&1 | tail -4; echo "rc=${PIPESTATUS[0]}"
done
echo "--- nonexistent"; $PY -m transformer_trace class out-x /nonexistent/dir 2>&1 | tail -3; echo "rc=${PIPESTATUS[0]}"
echo "--- all together"; $PY -m transformer_trace class out-all s/*/ 2>&1 | tail -4; echo "rc=${PIPESTATUS[0]}"
