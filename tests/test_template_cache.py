"""Compiled templates kept between processes (generator/template_cache.py) never show a stale page."""

from __future__ import annotations

import jinja2

from transformer_trace.template_cache import use_template_cache


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


def test_a_fresh_cache_is_filled_by_a_child_and_the_templates_render_the_same(tmp_path, monkeypatch):
    """On a fresh clone the build forks a child that compiles the templates the cache lacks (generator/build.py); what
    renders from them is what renders from templates compiled in place, and an up-to-date cache forks nothing."""
    import os

    import pytest

    from transformer_trace import template_cache

    if not hasattr(os, "fork") or (os.cpu_count() or 1) < 2:
        pytest.skip("the child is forked only with fork and two cores or more")
    monkeypatch.setenv("TT_CACHE_DIR", str(tmp_path / "cache"))
    templates = tmp_path / "templates"
    templates.mkdir()
    for i in range(3):
        (templates / f"t{i}.md.j2").write_text(f"{{% for w in words %}}{i}: {{{{ w }}}}\n{{% endfor %}}", encoding="utf-8")

    def fresh_env() -> jinja2.Environment:
        return use_template_cache(jinja2.Environment(loader=jinja2.FileSystemLoader(templates)))

    env = fresh_env()
    assert template_cache.missing(env) == ["t0.md.j2", "t1.md.j2", "t2.md.j2"]
    forks = []
    real_fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or real_fork())
    end = template_cache.compile_ahead(env)
    assert forks == [1]
    expected = {f"t{i}.md.j2": jinja2.Environment(loader=jinja2.FileSystemLoader(templates)).get_template(f"t{i}.md.j2").render(words=["a", "b"])
                for i in range(3)}
    here = [env.get_template(name).render(words=["a", "b"]) for name in expected]  # loaded if the child wrote it, else compiled
    assert here == list(expected.values())
    end()  # the child collected (or stopped): no process of it is left
    assert template_cache.compile_ahead(env)() is None and forks == [1]  # once per environment
    other = fresh_env()
    assert template_cache.missing(other) == []  # the child or this process wrote every one
    assert template_cache.compile_ahead(other)() is None and forks == [1]  # nothing missing: nothing forked
    assert [other.get_template(name).render(words=["a", "b"]) for name in expected] == list(expected.values())



def test_the_mkdocs_themes_templates_are_kept_compiled_and_an_edited_one_is_compiled_again(tmp_path, monkeypatch):
    """The site plugin's on_env gives MkDocs' theme environment the same cache: a new build process loads Material's
    templates compiled (none compiled again), and a template whose source changed is compiled afresh."""
    from mkdocs.theme import Theme

    from transformer_trace.site.plugin import TransformerTracePlugin

    monkeypatch.setenv("TT_CACHE_DIR", str(tmp_path / "cache"))
    overrides = tmp_path / "overrides"
    overrides.mkdir()
    compiled: list[str | None] = []
    real_compile = jinja2.Environment.compile

    def counted(env, source, name=None, *args, **kwargs):
        compiled.append(name)
        return real_compile(env, source, name, *args, **kwargs)

    monkeypatch.setattr(jinja2.Environment, "compile", counted)

    def site_name_block(word: str) -> str:
        """probe.html, extending Material's base.html, as a new build process loads it."""
        (overrides / "probe.html").write_text(f"{{% extends 'base.html' %}}{{% block site_name %}}{word}{{% endblock %}}")
        env = Theme(name="material", custom_dir=str(overrides)).get_env()
        env = TransformerTracePlugin().on_env(env, config=None, files=None)
        env.get_template("base.html")  # Material's own
        template = env.get_template("probe.html")
        return "".join(template.blocks["site_name"](template.new_context()))

    assert site_name_block("first") == "first"
    assert {"probe.html", "base.html"} <= set(compiled)
    compiled.clear()
    assert site_name_block("first") == "first"
    assert compiled == []  # read back compiled: Material's templates and the override
    assert site_name_block("second") == "second"
    assert compiled == ["probe.html"]  # only the edited template


def test_options_that_change_the_compiled_code_choose_another_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TT_CACHE_DIR", str(tmp_path / "cache"))

    def folder(newstyle: bool = False, **options) -> str:
        env = jinja2.Environment(extensions=["jinja2.ext.i18n"], **options)
        env.install_null_translations(newstyle=newstyle)  # type: ignore[attr-defined]
        return use_template_cache(env).bytecode_cache.directory  # type: ignore[union-attr]

    assert folder() == folder()
    assert len({folder(), folder(newstyle=True), folder(enable_async=True), folder(finalize=str)}) == 4
