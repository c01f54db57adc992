"""Record names and shape legends come from the model's declarations: nothing in a catalogue spells them again.

A catalogue names a tensor through ``Place(path, ModuleClass).POINT`` (generator/places.py), and a report's legend,
run sizes, trace binding and explorer axis labels read the model file's one ``LEGEND`` (models/legend.py).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import re
import sys
from pathlib import Path

import pytest
import torch

from transformer_trace.places import Place, layer_pattern
from transformer_trace.reports import REPORTS
from transformer_trace.sources import Ref
from transformer_trace.models.legend import Legend, Offset, Quotient
from transformer_trace.models.recording import Point, declared_points

CATALOGUES = {key: importlib.import_module(type(report.options()).__module__.rsplit(".", 1)[0] + ".catalogue")
              for key, report in REPORTS.items()}


def refs_in(value, seen=None) -> list[Ref]:
    """Every ``Ref`` reachable from a catalogue value: snapshots, their checks, figures and their drawings."""
    if isinstance(value, Ref):
        return [value]
    if isinstance(value, (tuple, list)):
        return [ref for item in value for ref in refs_in(item)]
    if isinstance(value, dict):
        return [ref for item in value.values() for ref in refs_in(item)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [ref for f in dataclasses.fields(value) for ref in refs_in(getattr(value, f.name))]
    return []


def catalogue_refs(catalogue) -> list[Ref]:
    return refs_in([catalogue.SNAPSHOTS, catalogue.FIGURES, getattr(catalogue, "ALSO_RECORD", ())])


def places_of(catalogue) -> dict[str, Place]:
    return {name: value for name, value in vars(catalogue).items() if isinstance(value, Place)}


class EveryBlockFirst(dict):
    """Places with any other placeholder ({i}: every block, filled in by a check) at the first layer."""

    def __missing__(self, key: str) -> str:
        return "0"


def meta_model(opts):
    with torch.device("meta"):
        return opts.build_model()


def fresh_catalogue(key: str):
    """The report's catalogue module executed again from its file, beside the imported one (the registry keeps its
    own)."""
    module = CATALOGUES[key]
    spec = importlib.util.spec_from_file_location(f"{module.__name__}_again", module.__file__)
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    return fresh


def a_used_point(key: str) -> tuple[type, str, Point]:
    """A point the report's catalogue refers to through a place: (module class, attribute, point)."""
    catalogue = CATALOGUES[key]
    used = {ref.template for ref in catalogue_refs(catalogue)}
    for place in places_of(catalogue).values():
        for attribute, value in vars(place.module).items():
            if isinstance(value, Point) and getattr(place, attribute).template in used:
                return place.module, attribute, value
    raise AssertionError(f"{key}: no catalogue reference made through a place")


@pytest.mark.parametrize("key", REPORTS)
def test_every_ref_of_the_catalogue_resolves_to_a_declared_point_at_every_layer(key):
    catalogue, defaults = CATALOGUES[key], REPORTS[key].options(device="cpu")
    refs = catalogue_refs(catalogue)
    assert len(refs) > 10
    for layer in range(1, defaults.n_layers() + 1):
        opts = dataclasses.replace(defaults, layer=layer)
        declared = declared_points(meta_model(opts))
        unknown = sorted({ref.name(opts.places()) for ref in refs} - set(declared))
        assert unknown == [], f"layer {layer}: not declared by the model: {unknown}"


@pytest.mark.parametrize("key", REPORTS)
def test_each_place_of_the_catalogue_holds_the_module_class_it_names(key):
    defaults = REPORTS[key].options(device="cpu")
    for layer in range(1, defaults.n_layers() + 1):
        opts = dataclasses.replace(defaults, layer=layer)
        model = meta_model(opts)
        for name, place in places_of(CATALOGUES[key]).items():
            path = place.path.format_map(EveryBlockFirst(opts.places()))
            found = type(model.get_submodule(path)) if path else type(model)
            assert found is place.module, f"{name} = {place}: the model has a {found.__name__} at {path!r}"


def spelled_refs(path: Path) -> list[str]:
    """The record names a module's source spells in ``Ref(...)`` calls, as written (f-strings unparsed)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [ast.unparse(call.args[0]) for call in ast.walk(tree)
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "Ref" and call.args]


@pytest.mark.parametrize("key", REPORTS)
def test_the_catalogue_spells_no_record_name_but_whole_names_by_placeholder(key):
    """A point's name is never written out: only ``Ref("{enc_prev}")`` (what feeds the traced layer: another point
    per layer) names a tensor by a placeholder alone."""
    spelled = spelled_refs(Path(CATALOGUES[key].__file__))
    assert [name for name in spelled if not re.fullmatch(r"'\{\w+\}'", name)] == []


def test_the_source_check_catches_a_spelled_record_name(tmp_path):
    path = tmp_path / "catalogue.py"
    path.write_text("Ref('{enc}.self_attn.q')\nRef(f'{_B}.attn.q')\nRef('{enc_prev}')\n", encoding="utf-8")
    assert spelled_refs(path) == ["'{enc}.self_attn.q'", "f'{_B}.attn.q'", "'{enc_prev}'"]


@pytest.mark.parametrize("key", REPORTS)
def test_a_point_removed_from_the_model_fails_the_catalogue_at_import_naming_it(key, monkeypatch):
    module_class, attribute, _ = a_used_point(key)
    monkeypatch.delattr(module_class, attribute)
    with pytest.raises(AttributeError, match=rf"{module_class.__name__} declares no record point {attribute}\b"):
        fresh_catalogue(key)


@pytest.mark.parametrize("key", REPORTS)
def test_a_point_renamed_in_the_model_renames_every_reference_to_it(key, monkeypatch):
    module_class, attribute, point = a_used_point(key)
    renamed = dataclasses.replace(point, name=f"{point.name}_renamed")
    places = [place for place in places_of(CATALOGUES[key]).values() if issubclass(place.module, module_class)]
    before = {ref.template for ref in catalogue_refs(CATALOGUES[key])}
    monkeypatch.setattr(module_class, attribute, renamed)
    after = {ref.template for ref in catalogue_refs(fresh_catalogue(key))}
    old_names = {Ref.at(place.path, point).template for place in places} & before
    assert old_names and not old_names & after
    assert {Ref.at(place.path, renamed).template for place in places} & after
    opts = REPORTS[key].options(device="cpu")
    declared = declared_points(meta_model(opts))  # the model, read again, declares the new name: all still resolve
    assert {Ref(name).name(opts.places()) for name in after} <= set(declared)


def test_a_place_refuses_a_point_its_class_does_not_declare():
    from transformer_trace.models.encoder_decoder import MLP

    with pytest.raises(AttributeError, match="MLP declares no record point Q .*its points: INPUT, FC1, HIDDEN, OUT"):
        Place("{enc}.mlp", MLP).Q
    assert Place("{enc}.mlp", MLP).FC1 == Ref("{enc}.mlp.fc1")


# ----------------------------------------------------------------------------- legends


def legend_of(key: str) -> Legend:
    return sys.modules[type(meta_model(REPORTS[key].options(device="cpu"))).__module__].LEGEND


@pytest.mark.parametrize("key", REPORTS)
def test_the_report_reads_the_model_files_one_legend(key):
    legend = legend_of(key)
    assert REPORTS[key].dims_legend is legend
    assert set(REPORTS[key].exploration.axis_labels) <= set(legend)


@pytest.mark.parametrize("key", REPORTS)
def test_every_declared_shape_uses_only_the_legends_symbols(key):
    legend = legend_of(key)
    declared = declared_points(meta_model(REPORTS[key].options(device="cpu")))
    unknown = {f"{name}: {factor}" for name, d in declared.items()
               for axis in d.point.shape for factor in axis.split("·")
               if not factor.isdigit() and factor not in legend and factor not in legend.local}
    assert unknown == set()


@pytest.mark.parametrize("key", REPORTS)
def test_a_runs_sizes_are_every_symbol_of_the_legend_and_keep_its_relations(key, runs):
    legend, dims = legend_of(key), runs[key].dims
    assert set(dims) == set(legend)
    for symbol, rule in legend.derivations():
        assert dims[symbol] == rule(dims), symbol


def test_sizes_derive_what_follows_and_refuse_what_is_unknown_or_missing():
    legend = Legend({"B": "", "N": "", "N1": "", "C": "", "h": "", "hs": ""},
                    relations=(Quotient("hs", "C", "h"), Offset("N1", "N", 1)))
    assert legend.sizes(B=1, N=9, C=8, h=2) == {"B": 1, "N": 9, "N1": 10, "C": 8, "h": 2, "hs": 4}
    assert list(legend.sizes(B=1, N=9, C=8, h=2)) == ["B", "N", "N1", "C", "h", "hs"]  # each after its sources
    with pytest.raises(ValueError, match="no such symbol"):
        legend.sizes(B=1, N=9, C=8, h=2, X=3)
    with pytest.raises(ValueError, match="no size for B"):
        legend.sizes(N=9, C=8, h=2)
    with pytest.raises(ValueError, match="follows from hs = C / h"):
        legend.sizes(B=1, N=9, C=8, h=2, hs=4)
    with pytest.raises(ValueError, match="no such symbol"):
        legend.axis_labels(Q="heads")
    with pytest.raises(ValueError, match="not in the legend"):
        Legend({"C": ""}, relations=(Quotient("hs", "C", "h"),))


def test_one_pass_of_derivations_adds_what_follows_from_the_sizes_already_known_and_says_whether_it_added():
    legend = Legend({"N": "", "N1": "", "C": "", "h": "", "hs": ""},
                    relations=(Quotient("hs", "C", "h"), Offset("N1", "N", 1)))
    dims = {"C": 8, "h": 2, "N1": 5}
    assert legend.derive_into(dims) and dims == {"C": 8, "h": 2, "N1": 5, "hs": 4, "N": 4}
    assert not legend.derive_into(dims)  # nothing left to derive
    unknown = {"C": 8}  # no h, and hs = C / h needs it: passed over, not an error
    assert not legend.derive_into(unknown) and unknown == {"C": 8}
    zero = {"C": 8, "hs": 0}  # h = C / hs with hs = 0: passed over
    assert not legend.derive_into(zero) and zero == {"C": 8, "hs": 0}


def test_the_trace_binds_derived_sizes_from_the_models_relations_only():
    from transformer_trace.trace.reading.verify import bind_dims

    named = [(("B", "N1", "C"), (1, 5, 8)), (("B", "h", "N1", "hs"), (1, 2, 5, 4))]
    with_relations = Legend({"B": "", "N": "", "N1": "", "C": "", "h": "", "hs": ""},
                            relations=(Quotient("hs", "C", "h"), Offset("N1", "N", 1)))
    assert bind_dims(named, with_relations)["N"] == 4
    without = Legend(dict(with_relations))
    assert "N" not in bind_dims(named, without)


def test_the_legend_reads_as_a_table():
    text = Legend({"B": "batch size", "hs": "head size"}, relations=(), local={"L": "S or T"}).text()
    assert text.splitlines() == ["B   batch size", "hs  head size", "L   S or T"]


def test_a_legend_is_read_from_the_model_files_docstring_table():
    doc = ("The model.\n\nShape legend, used in every comment:\n    B   batch size\n    hs  head size C / h\n"
           "    C   model width\n    h   attention heads\nModule axes:\n    Lq, Lk  query and key lengths\n\nMore prose.\n")
    legend = Legend.parse(doc, relations=(Quotient("hs", "C", "h"),))
    assert dict(legend) == {"B": "batch size", "hs": "head size C / h", "C": "model width", "h": "attention heads"}
    assert legend.local == {"Lq": "query and key lengths", "Lk": "query and key lengths"}
    with pytest.raises(ValueError, match="no shape legend"):
        Legend.parse("A model without a legend.")


def test_a_layer_pattern_matches_the_point_at_every_layer_and_captures_the_layer():
    from transformer_trace.models.vit import SelfAttention

    ref = Place("blocks.{layer}.attn", SelfAttention).PROBS
    pattern = layer_pattern(ref, "layer")
    assert re.fullmatch(pattern, "blocks.11.attn.probs")[1] == "11"
    assert not re.fullmatch(pattern, "blocks.1.attn.scores") and not re.fullmatch(pattern, "blocksX1.attn.probs")
    with pytest.raises(ValueError, match="no placeholder"):
        layer_pattern(ref, "block")


@pytest.mark.parametrize("key", REPORTS)
def test_each_explorer_group_finds_one_tensor_per_layer_among_the_names_it_ships(key):
    exploration, opts = REPORTS[key].exploration, REPORTS[key].options(device="cpu")
    names = exploration.names(opts.config())
    declared = declared_points(meta_model(opts))
    assert set(names) <= set(declared)
    for group in exploration.groups:
        layers = [int(match[1]) for n in names if (match := re.fullmatch(group.pattern, n))]
        assert layers == list(range(opts.n_layers())), group.key
