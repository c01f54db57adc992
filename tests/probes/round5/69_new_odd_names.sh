# Probe: `new` with odd but legal names (spaces, Markdown/HTML characters, leading dash, emoji); mkdocs.yml must parse.
cd "$OUT"
for name in 'my site #1' '*bold* _x_ [l](u) <b>' '-dash' 'naïve 🤖' 'a"quote'"'"; do
  echo "--- new [$name]"
  $PY -m transformer_trace new -- "$name" 2>&1 | tail -3; echo "rc=$?"
  if [ -f "$name/mkdocs.yml" ]; then
    $PY -c "import sys,yaml; d=yaml.safe_load(open(sys.argv[1])); print('site_name=', repr(d.get('site_name')))" "$name/mkdocs.yml" 2>&1 | tail -1
    head -1 "$name/docs/index.md"
  fi
done
