# The two everyday commands (see README):  make serve  |  make test
# Both create the project's environment in .venv/ on first use.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: serve site test browser pdf clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

# Generate both reports from the bundled inputs, build the site strictly, and serve it on http://127.0.0.1:8000
serve: site
	$(VENV)/bin/mkdocs serve --dirtyreload

site: $(STAMP)
	$(PY) -m generator build
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

# Debian's Chromium and the print fonts for the real-browser tests and the PDF export (never a downloaded
# browser build). The script installs only the packages that are missing.
browser:
	@scripts/install-chromium.sh

test: $(STAMP) browser
	NO_MKDOCS_2_WARNING=1 $(PY) -m pytest

pdf: site browser
	$(PY) -m generator pdf

clean:
	rm -rf site test-artifacts
