"""The site a command works on is found as `mkdocs` finds it (./mkdocs.yml, or --config, and its docs_dir), and
`new DIR` starts one. In-process and fast: tests/test_install.py runs the same commands from an installed wheel."""

from __future__ import annotations

import argparse
from importlib import metadata
from pathlib import Path

import pytest
import yaml

from transformer_trace.cli import main
from transformer_trace.errors import UserError
from transformer_trace.docs_folder.location import locate_site

SITE_COMMANDS = (["build"], ["trace", "model.py"], ["serve"], ["pdf"])


def args_of(command: str, **given) -> argparse.Namespace:
    docs = "docs" if command == "serve" else "out"
    return argparse.Namespace(command=command, config=given.get("config"), **{docs: given.get("docs")}, pdf=False)


@pytest.mark.parametrize("command", SITE_COMMANDS, ids=lambda c: c[0])
def test_without_a_mkdocs_yml_here_a_site_command_refuses_in_one_line(command, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.py").write_text("x = 1  # trace: x\n", encoding="utf-8")
    assert main(command) == 2
    err = capsys.readouterr().err
    assert err == (f"error: no mkdocs.yml in {tmp_path}: run this in your MkDocs site's folder, name its configuration "
                   f"with --config FILE, or start a site with: transformer-trace new DIR\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.py"]


@pytest.mark.parametrize("command", ["build", "trace", "serve", "pdf"])
def test_the_current_folders_mkdocs_yml_names_the_docs_folder(command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mkdocs.yml").write_text("site_name: Mine\ndocs_dir: pages\n", encoding="utf-8")
    args = args_of(command)
    locate_site(args)
    assert args.config == tmp_path / "mkdocs.yml"
    assert getattr(args, "docs" if command == "serve" else "out") == tmp_path / "pages"


def test_config_names_another_site_whose_docs_dir_is_relative_to_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "course").mkdir()
    (tmp_path / "course" / "mkdocs.yml").write_text("site_name: Course\n", encoding="utf-8")  # MkDocs' default docs_dir
    args = args_of("build", config=Path("course/mkdocs.yml"))
    locate_site(args)
    assert args.out == tmp_path / "course" / "docs"


def test_out_given_overrides_the_docs_dir_and_build_needs_no_mkdocs_yml_then(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = args_of("build", docs=tmp_path / "elsewhere")
    locate_site(args)
    assert (args.config, args.out) == (None, tmp_path / "elsewhere")
    with pytest.raises(UserError, match="no mkdocs.yml"):
        locate_site(args_of("serve", docs=tmp_path / "elsewhere"))  # serving builds a site: it needs its configuration


@pytest.mark.parametrize("config", ["missing.yml", "folder"])
def test_a_config_that_is_not_a_file_is_refused(config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "folder").mkdir()
    with pytest.raises(UserError, match=f"--config {config}: .* MkDocs configuration file"):
        locate_site(args_of("build", config=Path(config)))


def test_new_writes_a_starter_site_whose_mkdocs_yml_lists_one_report(tmp_path, capsys):
    folder = tmp_path / "Notes *of* <me>"
    assert main(["new", str(folder)]) == 0
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) == [
        ".gitignore", "docs/index.md", "mkdocs.yml"]
    config = yaml.safe_load((folder / "mkdocs.yml").read_text(encoding="utf-8"))
    # user text is data: quoted in YAML, its HTML characters as entities (MkDocs themes write site_name into their HTML
    # unescaped, tests/test_hostile_names.py), escaped in Markdown only where Markdown or HTML would read it
    assert config["site_name"] == "Notes *of* &#60;me&#62;"
    assert config["theme"] == {"name": "material", "font": False, "features": ["navigation.indexes"]}
    assert config["plugins"] == ["search", {"transformer-trace": {"reports": {"toy-vit": {}}}}]
    assert (folder / "docs" / "index.md").read_text(encoding="utf-8").startswith("# Notes \\*of\\* &lt;me>\n")
    assert "mkdocs serve" in capsys.readouterr().out


def test_new_refuses_a_folder_that_is_not_empty_and_changes_nothing(tmp_path, capsys):
    (tmp_path / "mine.txt").write_text("mine", encoding="utf-8")
    (tmp_path / "file").write_text("a file", encoding="utf-8")
    for target, why in ((tmp_path, "the folder is not empty"), (tmp_path / "file", "is a file")):
        assert main(["new", str(target)]) == 2
        advice = "name a new or empty folder" if "empty" in why else "name a new folder"
        assert capsys.readouterr().err == f"error: {target}: {why}; {advice}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "mine.txt"]


def test_new_accepts_an_empty_folder(tmp_path):
    assert main(["new", str(tmp_path), "-q"]) == 0
    assert (tmp_path / "mkdocs.yml").is_file()


def test_version_is_the_installed_distributions(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip().endswith(f" {metadata.version('transformer-trace')}")


BOMB = "".join(f"{a}: &{a} [{', '.join([f'*{b}'] * 9)}]\n" for b, a in zip("abcdefgh", "bcdefghi"))


@pytest.mark.parametrize("text, said", [
    ("- a\n- b\n", "not a MkDocs configuration (settings such as site_name:, not a list)"),
    ("just words\n", "not a MkDocs configuration (settings such as site_name:, not a str)"),
    ("a: &a [x, x, x, x, x, x, x, x, x]\n" + BOMB + "docs_dir: *i\n", "docs_dir: expected a folder name, not a list"),
], ids=["list", "string", "aliases-expanding-to-9**9"])
def test_a_mkdocs_yml_that_is_no_configuration_is_refused_in_one_line_before_anything_runs(tmp_path, monkeypatch,
                                                                                            capsys, text, said):
    monkeypatch.chdir(tmp_path)
    Path("mkdocs.yml").write_text(text, encoding="utf-8")
    Path("model.py").write_text("import torch\nx = torch.ones(2)  # trace: x\n", encoding="utf-8")
    assert main(["trace", "model.py"]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path / 'mkdocs.yml'}: {said}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mkdocs.yml", "model.py"]
