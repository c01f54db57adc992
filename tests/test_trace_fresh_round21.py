"""Round twenty-one's fresh implementations, both sides (tests/trace_fresh/ROUND21_GPT.md, ROUND21_VIT.md): our files
only are committed, each folder plants at least three of its bugs in a form new to the checks (but the two student-kind
ones the round asked for, piyushsinghoffice's encoder-decoder and Vitgracer's ViT, whose bugs are mostly classic ones in
their authors' style, said in their SOURCE.md), and their correct code is traced where their upstream files are present
beside our own ($TRACE_FRESH_ROUND21, by default /work/fresh_round21/<folder>); elsewhere (CI) skipped. The round's
first result had two false reds, both on the GPT side: koayon's DeepNorm block (G19, G24: LayerNorm(α·x + y) read as
"computed from another tensor") and Learned-Attention's layer calling its attention three times (G18: a sum fitting
another hit of the same step); tests/test_trace_round21_forms_gpt.py holds both forms in scripts of ours."""

from __future__ import annotations

import pytest

from tests.fresh_rounds import assert_no_red_verdict, our_files_only, ours, planted_bugs, upstream_driver  # noqa: F401

DEEPNORM, LEARNED, STUDENT_ED = ("koayon_ml-implementations", "gangasingh7058_Learned-Attention",
                                 "piyushsinghoffice_transformers")
STUDENT_VIT, ROPE2D, RAW = ("Vitgracer_ViT-from-scratch", "faresZzz_ViT_from_scratch",
                            "Apzmie_Vision-Transformer-From-Scratch")
FOLDERS = [DEEPNORM, LEARNED, STUDENT_ED, STUDENT_VIT, ROPE2D, RAW]
STUDENT_KIND = {STUDENT_ED, STUDENT_VIT}


def test_round_twenty_one_folders_each_hold_our_files_only():
    assert our_files_only(21, [LEARNED, STUDENT_ED, RAW]) == 6 + 5 + 6
    assert our_files_only(21, [STUDENT_VIT], stubs=("einops",)) == 6
    assert our_files_only(21, [ROPE2D], stubs=("vit_from_scratch",)) == 6
    assert our_files_only(21, [DEEPNORM], stubs=("einops", "fancy_einsum", "jaxtyping", "joblib", "pandas",
                                                 "tensorboardX", "tiktoken", "transformers")) == 6


@pytest.mark.parametrize("name", [name for name in FOLDERS if name not in STUDENT_KIND])
def test_round_twenty_one_plants_at_least_three_bugs_per_implementation_in_a_form_new_to_the_checks(name):
    assert sum(bug["new_form"] is True for bug in planted_bugs(ours(21) / name)) >= 3


# the checks that must really run on each correct code (the first result's passed counts; DeepNorm's G24 now passes)
PASSED_AT_LEAST = {DEEPNORM: 16, LEARNED: 16, STUDENT_ED: 29, STUDENT_VIT: 18, ROPE2D: 18, RAW: 20}


@pytest.mark.slow
@pytest.mark.parametrize("name", FOLDERS)
def test_round_twenty_one_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(
        tmp_path, upstream_driver, name):
    assert_no_red_verdict(upstream_driver(21, name), tmp_path / "out", PASSED_AT_LEAST[name])
