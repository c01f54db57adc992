"""The Benchmarks page's GPU section (benchmarks/gpu.py): what it compares between a CUDA and a CPU build, and what it
says on a machine without a GPU (CI's)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import gpu  # noqa: E402


def _report(folder: Path, arrays: dict[str, np.ndarray]) -> None:
    (folder / "r" / "data").mkdir(parents=True)
    for name, array in arrays.items():
        np.save(folder / "r" / "data" / f"{name}.npy", array)


def test_the_largest_difference_between_the_two_builds_is_reported_per_report(tmp_path):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    _report(tmp_path / "cpu", {"x": a, "ids": np.arange(3)})
    _report(tmp_path / "cuda", {"x": a + np.float32(0.25), "ids": np.arange(3)})
    [(report, compared, worst, scale)] = gpu.largest_differences(tmp_path / "cpu", tmp_path / "cuda")
    assert (report, compared, worst, scale) == ("r", 1, 0.25, 5.0)  # integer arrays are not float comparisons


def test_a_build_whose_arrays_changed_shape_on_the_gpu_is_an_error(tmp_path):
    _report(tmp_path / "cpu", {"x": np.zeros((2, 3), np.float32)})
    _report(tmp_path / "cuda", {"x": np.zeros((3, 2), np.float32)})
    with pytest.raises(AssertionError):
        gpu.largest_differences(tmp_path / "cpu", tmp_path / "cuda")


def test_the_example_copy_makes_its_tensors_on_the_gpu(tmp_path):
    for example in gpu.EXAMPLES:
        copy = gpu.on_cuda(example, tmp_path)
        assert "import torch\ntorch.set_default_device('cuda')\n" in copy.read_text(encoding="utf-8")


@pytest.mark.skipif(torch.cuda.is_available(), reason="the no-GPU sentence is for machines without one")
def test_without_a_gpu_the_section_says_so_and_measures_nothing():
    section = gpu.gpu_section(lambda *_: pytest.fail("nothing is measured without a GPU"), 1)
    assert section.startswith("## GPU\n\nNo CUDA GPU was visible") and section.endswith("\n\n")
