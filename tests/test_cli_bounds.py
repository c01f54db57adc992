"""Every numeric option of the command line has a documented range: a value outside it (zero, negative, absurd, more
digits than Python reads) is refused in one short line naming the limit, exit code 2, before anything runs; and the
memory refusal states an absurd size readably."""

from __future__ import annotations

import pytest

from transformer_trace.arguments import MAX_STEPS, parser
from transformer_trace.cli import main
from transformer_trace.options import POSITIVE_LIMIT, readable_size

HUGE = "9" * 5000  # more digits than int() reads


def refusal(argv: list[str], capsys) -> str:
    """The one line ``python -m transformer_trace ARGV`` ends with; its exit code is 2."""
    try:
        code = main(argv)
    except SystemExit as exc:  # the parser's refusals
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert len(lines[0]) < 240, lines[0]  # readable, whatever was typed
    return lines[0]


@pytest.mark.parametrize("argv, limit", [
    (["train", "gpt", "--steps", "0"], "is not a positive whole number"),
    (["train", "gpt", "--steps", "-5"], "is not a positive whole number"),
    (["train", "gpt", "--steps", str(MAX_STEPS + 1)], f"choose a whole number from 1 to {MAX_STEPS:,}"),
    (["train", "gpt", "--steps", HUGE], f"choose a whole number from 1 to {MAX_STEPS:,}"),
    (["train", "gpt", "--steps", "1e3"], "is not a whole number"),
    (["train", "gpt", "--seed", HUGE], "a seed is a whole number from 0 to 2**63 - 1"),
    (["build", "--model", "gpt", "--d-model", str(POSITIVE_LIMIT + 1)], f"choose a whole number from 1 to {POSITIVE_LIMIT:,}"),
    (["build", "--model", "gpt", "--generate", HUGE], f"choose a whole number from 1 to {POSITIVE_LIMIT:,}"),
    (["build", "--model", "encoder-decoder", "--layer", "0"], "is not a positive whole number"),
    (["build", "--model", "encoder-decoder", "--d-ff", "-1"], "is not a positive whole number"),
    (["trace", "script.py", "--hit", "0"], "is not a positive whole number"),
    (["trace", "script.py", "--hit", HUGE], f"choose a whole number from 1 to {POSITIVE_LIMIT:,}"),
    (["trace", "script.py", "--timeout", HUGE], "expected seconds between 0 and 86400"),
    (["serve", "--port", "70000"], "choose 1 to 65535, or 0 for any free port"),
    (["serve", "--port", HUGE], "is not a port number"),
], ids=lambda v: " ".join(v)[:40] if isinstance(v, list) else None)
def test_a_number_out_of_its_range_is_refused_in_one_short_line_naming_the_limit(argv, limit, capsys, tmp_path):
    line = refusal([*argv, *(["--out", str(tmp_path / "out.pt")] if argv[0] == "train" else [])], capsys)
    assert argv[-2] in line and limit in line, line
    assert not any(tmp_path.iterdir())  # nothing ran, nothing was written


def test_train_takes_steps_up_to_its_documented_maximum(capsys):
    assert parser().parse_args(["train", "gpt", "--steps", str(MAX_STEPS)]).steps == MAX_STEPS
    assert parser().parse_args(["train", "gpt", "--steps", "1"]).steps == 1
    with pytest.raises(SystemExit):
        parser().parse_args(["train", "--help"])
    assert f"optimiser steps, 1 to {MAX_STEPS:,}" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("n_bytes, text", [
    (5 * 2**20, "5 MB"),
    (3 * 2**30 // 2, "1.5 GB"),
    (int(3.2 * 2**40), "3.2 TB"),
    (7 * 2**50, "7.0 PB"),
    (5 * 2**60, "5.0 EB"),
    (27 * 10**43, "2.7 × 10^44 bytes"),
    (9996 * 10**22, "1.0 × 10^26 bytes"),  # rounded up to the next power of ten, not "10.0 × 10^25"
    (10**400, "1.0 × 10^400 bytes"),  # beyond what a float holds
])
def test_sizes_read_as_a_few_characters_however_large(n_bytes, text):
    assert readable_size(n_bytes) == text


def test_the_memory_refusal_states_an_absurd_size_readably(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr("transformer_trace.options.available_memory", lambda: 8 * 2**30)
    line = refusal(["build", "--model", "gpt", "--weights", "random", "--d-model", str(POSITIVE_LIMIT), "--heads", "1",
                    "--out", str(tmp_path / "docs")], capsys)
    assert line == (f"error: --d-model {POSITIVE_LIMIT} with --layers 2 would need about 262.0 TB of memory, "
                    "and this machine has 8.0 GB available; choose smaller sizes")
    assert not (tmp_path / "docs").exists()
