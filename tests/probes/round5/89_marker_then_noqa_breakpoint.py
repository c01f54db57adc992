"""Probe: a catalogue marker followed by a linter comment (`# noqa`, `# type: ignore`) on the same line."""
import torch

ids = torch.randint(0, 256, (1, 4))  # BREAKPOINT G01  # noqa: E501
tok = torch.nn.Embedding(256, 8)(ids)  # type: ignore  # BREAKPOINT G02
print(tok.shape)
