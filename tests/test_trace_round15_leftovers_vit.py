"""Round fourteen's ViT leftovers (tests/trace_fresh/ROUND14_VIT.md, "What is left"): the forms its fixes left unread,
each held by a tiny script of our own (no upstream file).

- positions added to a tensor no snapshot shows (AIMv2: the patcher normalises its patch embeddings on an unmarked
  line, there is no class token, so neither S06 nor the patch embeddings S04 are what the table was added to): the
  step's input is the one local of the step's shape the line read, the table the local (or attribute) it added; the
  addition is checked, and the table added twice is named there.
- a convolutional tokenizer (CCT: a Conv2d, a ReLU and a MaxPool2d in an ``nn.Sequential``, the map flattened and its
  channels moved last on the marked line): the max-pool is a module kind of its own (``ModuleKind.MAX_POOL2D``), its
  call recorded on the line, and the step read as its map with the channels moved last; the map reshaped straight to
  (B, N, C) instead (a ``view``) is the known bug form "patch grid reshaped instead of permuted".
"""

from __future__ import annotations

from tests.conftest import trace_source as traced

# a ViT without a class token whose patcher normalises its patch embeddings (AIMv2's PatchEmbed ends with a norm)
NORMED_PATCHES = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, C, P = 2, 16, 4


class PatchEmbed(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Conv2d(3, C, kernel_size=P, stride=P)
        self.norm = nn.LayerNorm(C)

    def forward(self, x):
        x = self.proj(x).flatten(2).transpose(1, 2)  # BREAKPOINT S04
        x = self.norm(x)
        return x


class Embed(nn.Module):
    def __init__(self):
        super().__init__()
        self.patchifier = PatchEmbed()
        self.pos_embed = nn.Parameter(torch.randn(1, 20, C) * 0.02)

    def forward(self, x):
        tokens = self.patchifier(x)
        B, N, D = tokens.shape
        pos_embed = self.pos_embed
        tokens = tokens + pos_embed[:, :N]  # BREAKPOINT S07
        return tokens


img = torch.randn(B, 3, 16, 16)  # BREAKPOINT S01
with torch.no_grad():
    out = Embed().eval()(img)
'''

ADDED = "tokens = tokens + pos_embed[:, :N]"


def test_positions_added_to_the_patchers_norm_are_read_from_the_local_the_line_read(tmp_path):
    code, checks = traced(tmp_path, NORMED_PATCHES)
    assert code == 0 and checks["S07"]["passed"] is True, checks["S07"]
    assert "`tokens`" in checks["S07"]["detail"] and "`pos_embed`" in checks["S07"]["detail"], checks["S07"]


def test_positions_read_by_attribute_and_added_to_the_patchers_norm_pass(tmp_path):
    source = NORMED_PATCHES.replace(ADDED, "tokens = tokens + self.pos_embed[:, :N]")
    code, checks = traced(tmp_path, source)
    assert code == 0 and checks["S07"]["passed"] is True, checks["S07"]


def test_positions_added_twice_to_the_patchers_norm_are_named_there(tmp_path):
    code, checks = traced(tmp_path, NORMED_PATCHES.replace(ADDED, "tokens = tokens + 2 * pos_embed[:, :N]"))
    assert code == 1 and checks[""]["first_failure"].startswith("S07"), checks[""]
    assert checks["S07"]["evidence"]["name"] == "positions added twice", checks["S07"]


# a convolutional tokenizer: convolution, activation and max-pool in nested Sequentials, flattened on the marked line
TOKENIZER = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
C = 16


class Tokenizer(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_layers = nn.Sequential(nn.Sequential(
            nn.Conv2d(3, C, kernel_size=3, stride=1, padding=1, bias=False), nn.ReLU(),
            nn.MaxPool2d(kernel_size=3, stride=2, padding=1)))
        self.flattener = nn.Flatten(2, 3)

    def forward(self, x):
        return self.flattener(self.conv_layers(x)).transpose(-2, -1)  # BREAKPOINT S04


img = torch.randn(2, 3, 16, 16)  # BREAKPOINT S01
with torch.no_grad():
    out = Tokenizer().eval()(img)
'''

FLATTENED = "return self.flattener(self.conv_layers(x)).transpose(-2, -1)"


def test_a_convolutional_tokenizers_pooled_map_with_its_channels_moved_last_passes(tmp_path):
    code, checks = traced(tmp_path, TOKENIZER)
    assert code == 0 and checks["S04"]["passed"] is True and "MaxPool2d" in checks["S04"]["name"], checks["S04"]


def test_a_convolutional_tokenizers_pooled_map_reshaped_instead_of_permuted_is_named_there(tmp_path):
    code, checks = traced(tmp_path, TOKENIZER.replace(FLATTENED, "return self.flattener(self.conv_layers(x)).view("
                                                                  "x.shape[0], -1, C)"))
    assert code == 1 and checks[""]["first_failure"].startswith("S04"), checks[""]
    assert checks["S04"]["evidence"]["name"] == "patch grid reshaped instead of permuted", checks["S04"]
