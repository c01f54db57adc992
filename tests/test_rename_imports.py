"""scripts/rename_imports.py: what it renames to the package's own import name, and what it leaves alone.
(rename_imports: skip-file: the samples below are the script's input and must stay as they are.)"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT

SCRIPT = ROOT / "scripts" / "rename_imports.py"
spec = importlib.util.spec_from_file_location("rename_imports", SCRIPT)
rename_imports = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rename_imports)
RULES = rename_imports.rules(ROOT)

RENAMED = [
    ("from generator.cli import main", "from transformer_trace.cli import main"),
    ("from generator import reports", "from transformer_trace import reports"),
    ("import generator.pdf\ngenerator.pdf.export(docs)",
     "import transformer_trace.pdf\ntransformer_trace.pdf.export(docs)"),
    ("import generator", "import transformer_trace"),
    ("from models.gpt import GPT, GPTConfig", "from transformer_trace.models.gpt import GPT, GPTConfig"),
    ("import models.recording as rec", "import transformer_trace.models.recording as rec"),
    ('monkeypatch.setattr("generator.options.available_memory", f)',
     'monkeypatch.setattr("transformer_trace.options.available_memory", f)'),
    ('package = "generator.reports.gpt"', 'package = "transformer_trace.reports.gpt"'),
    ('f"generator.reports.{key}.trace"', 'f"transformer_trace.reports.{key}.trace"'),
    ('transformer-trace = "generator.cli:main"', 'transformer-trace = "transformer_trace.cli:main"'),
    ("	$(PY) -m generator serve", "	$(PY) -m transformer_trace serve"),
    (".venv/bin/python -m generator build --help", ".venv/bin/python -m transformer_trace build --help"),
    ('[sys.executable, "-m", "generator", "trace", script]',
     '[sys.executable, "-m", "transformer_trace", "trace", script]'),
    ('[sys.executable.encode(), b"-m", b"generator"]', '[sys.executable.encode(), b"-m", b"transformer_trace"]'),
    ('log = logging.getLogger("generator")', 'log = logging.getLogger("transformer_trace")'),
    ('caplog.at_level(logging.WARNING, logger="generator")',
     'caplog.at_level(logging.WARNING, logger="transformer_trace")'),
    ('__import__("generator").__file__', '__import__("transformer_trace").__file__'),
    (r're.compile(r"\b(?:generator\.reports|models)\.(gpt)\b")',
     r're.compile(r"\b(?:transformer_trace\.reports|models)\.(gpt)\b")'),
    ('    "from models.encoder_decoder import build_vocab\\n",',
     '    "from transformer_trace.models.encoder_decoder import build_vocab\\n",'),
]
KEPT = [
    "The generator writes every report; models are built on the CPU.",
    "generator/reports/gpt/training.py and models/vit.py",
    'ROOT / "generator" / "assets" / "tt-report.css"',
    "generator = torch.Generator().manual_seed(0)\nx = torch.randn(3, generator=generator)\ngenerator.manual_seed(1)",
    "from models.student_net import StudentNet",  # not one of the project's models: the user's own package
    "from generator.batches import make_batch",
    "self.models.gpt = None; status.models.filter(f)",
    "see docs/models.md and https://example.org/generator.html",
    "from transformer_trace.models.gpt import GPT",
    "python -m transformer_trace build",
    "from generator.cli import main  # rename_imports: keep",
]


@pytest.mark.parametrize(("before", "after"), RENAMED, ids=[b[:40] for b, _ in RENAMED])
def test_module_names_of_the_package_get_its_own_import_name_once(before, after):
    assert rename_imports.rename_text(before, RULES)[0] == after
    assert rename_imports.rename_text(after, RULES)[0] == after  # idempotent


@pytest.mark.parametrize("text", KEPT, ids=[k[:40] for k in KEPT])
def test_prose_paths_other_names_and_a_projects_own_packages_are_left_alone(text):
    assert rename_imports.rename_text(text, RULES) == (text, {})


def test_pyproject_maps_the_import_name_onto_the_design_cards_folders():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    renamed, _ = rename_imports.rename_pyproject(text, ROOT)
    if renamed == text:  # already renamed
        assert 'package-dir = {"transformer_trace" = "generator", "transformer_trace.models" = "models"}' in text
        return
    assert 'package-dir = {"transformer_trace" = "generator", "transformer_trace.models" = "models"}' in renamed
    assert '    "transformer_trace.reports.gpt",\n' in renamed and '    "transformer_trace.models",\n' in renamed
    assert "packages.find" not in renamed
    assert rename_imports.rename_pyproject(renamed, ROOT)[0] == renamed


def test_a_folder_with_its_own_models_package_is_left_alone(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "generator", tree / "generator", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "models", tree / "models", ignore=shutil.ignore_patterns("__pycache__"))
    (tree / "tests" / "corpus" / "repo" / "models").mkdir(parents=True)
    (tree / "tests" / "corpus" / "repo" / "models" / "__init__.py").write_text("", encoding="utf-8")
    theirs = "from models.gpt import GPT\n"  # that repository's own models/gpt.py
    (tree / "tests" / "corpus" / "repo" / "train.py").write_text(theirs, encoding="utf-8")
    (tree / "tests" / "test_ours.py").write_text("from models.gpt import GPT\n", encoding="utf-8")
    first = subprocess.run([sys.executable, SCRIPT, tree], capture_output=True, text=True, check=True)
    assert "tests/test_ours.py: from models.X import ×1" in first.stdout
    assert (tree / "tests" / "corpus" / "repo" / "train.py").read_text(encoding="utf-8") == theirs
    ours = (tree / "tests" / "test_ours.py").read_text(encoding="utf-8")
    assert ours == "from transformer_trace.models.gpt import GPT\n"
    second = subprocess.run([sys.executable, SCRIPT, tree, "--check"], capture_output=True, text=True)
    assert second.returncode == 0 and "would change 0 file(s)" in second.stdout
