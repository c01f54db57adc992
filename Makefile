# The two everyday commands (see README):  make serve  |  make test
# Both create the project's environment in .venv/ on first use.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: serve site test browser pdf clean

$(STAMP): pyproject.toml setup.py scripts/quiet_material.py
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@# -qq: errors only. A machine whose pip configuration names package indexes that lack a package prints one
	@# "Location ... is ignored" warning per package looked up (140 lines on a fresh machine here), none of it the user's
	$(PY) -m pip install -qq --upgrade pip
	@# setuptools' own notice about editable installs says nothing a user of this project can act on
	PYTHONWARNINGS='ignore:Editable installation' $(PY) -m pip install -qq -e '.[test]'
	@# Material's end-of-life banner, printed by every plain `mkdocs` command, off for this environment's programs
	@$(PY) scripts/quiet_material.py
	@touch $(STAMP)

# Serve on http://127.0.0.1:8000 (make serve PORT=8001 for another) with live reload and a form that regenerates a
# report in the warm process (generates every report from mkdocs.yml's inputs and builds the site first when they
# are missing). Each command is exec'd, so it is make's own child: a SIGTERM to make reaches it (no server outlives
# make holding the port), as Ctrl-C does.
PORT ?= 8000
serve: $(STAMP)
	exec env NO_MKDOCS_2_WARNING=1 $(PY) -m transformer_trace serve --port $(PORT)

# The transformer-trace plugin (mkdocs.yml) generates the reports that are missing or whose options changed
site: $(STAMP)
	exec env NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

# Debian's Chromium and the print fonts for the real-browser tests and the PDF export (never a downloaded
# browser build). The script installs only the packages that are missing.
browser:
	@scripts/install-chromium.sh

# Outside CI a machine that cannot install chromium still runs the suite (browser and PDF tests skip);
# on CI (CI set) a failed install stops here, since those tests must run.
# The suite runs in one worker process per core, at most four (pytest-xdist), each test file whole on one worker so
# its module fixtures are built once: on CI's two cores about half the time of one process. TEST_WORKERS=0 runs it in
# this process alone.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ $$n -gt 4 ] && n=4; echo $$n)
test: $(STAMP)
	@scripts/install-chromium.sh || { test -z "$$CI" && echo "warning: chromium is missing: the browser and PDF tests will be skipped" >&2; }
	exec env NO_MKDOCS_2_WARNING=1 $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile

pdf: site browser
	exec $(PY) -m transformer_trace pdf

clean:
	rm -rf site test-artifacts
