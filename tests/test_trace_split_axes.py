"""A step captured with some of its axes split further than the catalogue's shape — three `unfold`s leave the patches
as (B, 1, H/P, W/P, Ch, P, P) where the catalogue has (B, N, Ch, P, P) (nerminnuraydogan in
tests/trace_fresh/ROUND5_VIT.md) — holds the same values in the same order: it is read with those axes merged, and a
size written as a power of an unbound name (Ch·P·P) binds that name as the whole root (P from (B, N, 192), Ch = 3).
Both steps were not checkable before; now they are checked, and patches read in another pixel order are named."""

from __future__ import annotations

import pytest
import torch

from tests.conftest import trace_source as traced
from transformer_trace.trace.reading.verify import LayoutStatus, bind_dims, layout
from transformer_trace.models.legend import Legend

UNFOLDED_PATCHES = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, CH, SIDE, P, C = 2, 3, 32, 8, 16


class PatchEmbedding(nn.Module):
    def __init__(self):
        super().__init__()
        self.W = nn.Parameter(torch.randn(P * P * CH, C))

    def forward(self, x):
        x = x  # BREAKPOINT S01
        patches = x.unfold(1, CH, CH).unfold(2, P, P).unfold(3, P, P)  # BREAKPOINT S02
        patches = patches.contiguous().view(patches.size(0), -1, CH * P * P)  # BREAKPOINT S03
        return torch.matmul(patches, self.W)  # BREAKPOINT S04


with torch.no_grad():
    PatchEmbedding()(torch.randn(B, CH, SIDE, SIDE))
'''


def test_patches_unfolded_into_seven_axes_are_read_merged_and_checked(tmp_path):
    code, checks = traced(tmp_path, UNFOLDED_PATCHES)
    assert code == 0, checks[""]
    for label in ("S02", "S03"):
        assert checks[label]["passed"] is True, checks[label]


def test_patches_unfolded_in_another_pixel_order_are_named(tmp_path):
    code, checks = traced(tmp_path, UNFOLDED_PATCHES.replace(".unfold(2, P, P).unfold(3, P, P)",
                                                             ".unfold(3, P, P).unfold(2, P, P)"))
    assert code == 1, checks[""]
    assert checks[""]["first_failure"].startswith("S02"), checks[""]
    assert checks["S02"]["evidence"]["name"] == "patches read in another pixel order", checks["S02"]


@pytest.mark.parametrize(("shape", "read"), [((2, 1, 4, 4, 3, 8, 8), True), ((2, 4, 4, 3, 8, 8, 1), True),
                                             ((2, 16, 3, 4, 2, 8), True), ((2, 8, 2, 3, 8, 8), True),
                                             ((2, 3, 16, 8, 8, 1), False), ((2, 5, 4, 3, 8, 8), False)])
def test_axes_split_further_are_read_only_where_each_axis_is_a_run_of_them(shape, read):
    found = layout(torch.zeros(shape), ("B", "N", "Ch", "P", "P"), {"B": 2, "N": 16, "Ch": 3, "P": 8}, {})
    assert (found.status is LayoutStatus.LAYOUT) is read, found.note


def test_a_size_written_as_a_power_of_an_unbound_name_binds_its_root():
    legend = Legend({"B": "batch", "N": "patches", "Ch": "channels", "H": "image side", "P": "patch size"})
    dims = bind_dims([(("B", "Ch", "H"), (2, 3, 32)), (("B", "N", "Ch·P·P"), (2, 16, 192))], legend)
    assert dims["P"] == 8
    assert "P" not in bind_dims([(("B", "Ch", "H"), (2, 3, 32)), (("B", "N", "Ch·P·P"), (2, 16, 190))], legend)
