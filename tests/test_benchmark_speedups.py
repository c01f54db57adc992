"""Speed-ups the Benchmarks page measures keep the output as it was: each is held here to give what the slower way
gave."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

INHERITING = """INHERIT: {parent}
site_name: !ENV [TT_SPEEDUP_TEST_NAME, "fallback"]
anchors:
  base: &base {{a: 1, b: [x, y]}}
  copy: *base
markdown_extensions:
  pymdownx.emoji:
    emoji_index: !!python/name:material.extensions.emoji.twemoji
plugins:
  transformer-trace:
    reports:
      vit: {{weights: !ENV [TT_SPEEDUP_UNSET, random], seed: 7}}
"""


@pytest.mark.parametrize("config", ["project", "inheriting"])
def test_mkdocs_yml_parsed_by_libyaml_gives_what_mkdocs_own_loader_gives(tmp_path, monkeypatch, config):
    from mkdocs.utils.yaml import yaml_load

    from transformer_trace.docs_folder.location import read_mkdocs_yaml

    monkeypatch.setenv("TT_SPEEDUP_TEST_NAME", "from the environment")
    path = ROOT / "mkdocs.yml"
    if config == "inheriting":
        path = tmp_path / "mkdocs.yml"
        path.write_text(INHERITING.format(parent=ROOT / "mkdocs.yml"), encoding="utf-8")
    with open(path, "rb") as file:
        fast = read_mkdocs_yaml(file)
    with open(path, "rb") as file:
        mkdocs_own = yaml_load(file)
    assert fast == mkdocs_own and repr(fast) == repr(mkdocs_own)
    if config == "inheriting":
        assert fast["site_name"] == "from the environment" and fast["anchors"]["copy"] == {"a": 1, "b": ["x", "y"]}


def test_mkdocs_yml_that_is_not_yaml_is_refused_as_mkdocs_refuses_it():
    from mkdocs.exceptions import ConfigurationError

    from transformer_trace.docs_folder.location import read_mkdocs_yaml

    broken = io.BytesIO(b"site_name: [unclosed\n")
    broken.name = "mkdocs.yml"
    with pytest.raises(ConfigurationError, match="MkDocs encountered an error parsing the configuration file"):
        read_mkdocs_yaml(broken)
