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
