"""Compiled templates kept between processes (generator/template_cache.py) never show a stale page."""

from __future__ import annotations

import jinja2

from generator.template_cache import use_template_cache


def render(folder, text: str, **options) -> str:
    (folder / "page.md.j2").write_text(text, encoding="utf-8")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(folder), **options)
    return use_template_cache(env).get_template("page.md.j2").render(word="otters")


def test_an_edited_template_or_other_syntax_options_are_compiled_again(tmp_path, monkeypatch):
    monkeypatch.setenv("TT_CACHE_DIR", str(tmp_path / "cache"))
    templates = tmp_path / "templates"
    templates.mkdir()
    assert render(templates, "{% if 1 %}\nfirst {{ word }}\n{% endif %}\n") == "\nfirst otters\n"
    assert any((tmp_path / "cache" / "templates").rglob("*.cache"))  # kept for the next process
    assert render(templates, "{% if 1 %}\nsecond {{ word }}\n{% endif %}\n") == "\nsecond otters\n"
    assert render(templates, "{% if 1 %}\nsecond {{ word }}\n{% endif %}\n", trim_blocks=True) == "second otters\n"


def test_an_unwritable_cache_only_costs_the_compilation(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("TT_CACHE_DIR", str(blocker))
    templates = tmp_path / "templates"
    templates.mkdir()
    assert render(templates, "hello {{ word }}") == "hello otters"
