"""Command line: `python -m generator build ...` (see --help)."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from generator.errors import UserError

DEFAULT_DOCS = Path(__file__).resolve().parent.parent / "docs"
MODELS = ("encoder-decoder", "vit")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line and exit code 2, like every other input error
        self.exit(2, f"error: {message} (see --help)\n")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m generator", description="Generate the traced-Transformer report site from real forward passes.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    b = sub.add_parser(
        "build",
        help="run the models and write the report pages into docs/",
        description="Run the model(s) once with recording on and write one page per snapshot, figures, "
        "guiding-question answers and snapshots.json into the docs folder. The previous output is "
        "replaced only when everything succeeded.",
        epilog="examples:\n"
        "  python -m generator build\n"
        "  python -m generator build --model encoder-decoder --src \"the cat sat\" --tgt \"le chat\"\n"
        "  python -m generator build --model vit --image photo.jpg --weights imagenet\n"
        "then: mkdocs serve",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    b.add_argument("--model", choices=("all", *MODELS), default="all", help="which report to (re)generate (default: all)")
    b.add_argument("--seed", type=int, default=7, help="torch.manual_seed for random weights (default: 7, as the seed report)")
    b.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"), help="auto = CUDA when available, else CPU")
    b.add_argument("--layer", type=int, default=1, help="which encoder/decoder layer or ViT block the detailed pages trace (1-based, default 1)")
    b.add_argument("--out", type=Path, default=DEFAULT_DOCS, help="docs folder to write into (default: the project's docs/)")
    ed = b.add_argument_group("encoder-decoder")
    ed.add_argument("--src", help="source sentence (default: the seed report's)")
    ed.add_argument("--tgt", help="target sentence (default: the seed report's)")
    ed.add_argument("--layers", type=int, default=2, help="encoder and decoder layers (default 2)")
    ed.add_argument("--d-model", type=int, default=128, help="model width (default 128)")
    ed.add_argument("--heads", type=int, default=4, help="attention heads (default 4; must divide --d-model)")
    ed.add_argument("--d-ff", type=int, default=256, help="feed-forward width (default 256)")
    vit = b.add_argument_group("vit")
    vit.add_argument("--image", type=Path, help="image file (JPEG, PNG, WebP, GIF, ...; default: the bundled image)")
    vit.add_argument("--weights", default="random", help="random (seeded, default) or imagenet (torchvision IMAGENET1K_V1)")
    vit.add_argument("--vit-size", default="b16", help="ViT preset: b16 (default), tiny, l16, b16-384")
    b.add_argument("--pdf", action="store_true", help="also build the site and export one PDF per report (needs chromium)")
    out = b.add_mutually_exclusive_group()
    out.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary")
    out.add_argument("-v", "--verbose", action="store_true", help="log each step, with tracebacks on errors")
    pdf = sub.add_parser("pdf", help="build the site and print each report to docs/pdf/<report>.pdf",
                         description="Build the site with MkDocs, print every generated report's print view to PDF through a "
                         "headless Chromium, and link the PDFs from the landing page.")
    pdf.add_argument("--out", type=Path, default=DEFAULT_DOCS, help="docs folder holding the generated reports (default: docs/)")
    pdf.add_argument("--config", type=Path, default=DEFAULT_DOCS.parent / "mkdocs.yml", help="mkdocs.yml to build with")
    pdf.add_argument("-q", "--quiet", action="store_true")
    pdf.add_argument("-v", "--verbose", action="store_true")
    from generator.serve import add_parser as add_serve_parser  # `serve`: regenerate from the browser (generator/serve.py)
    add_serve_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("generator").setLevel(logging.INFO if args.verbose else logging.WARNING)
    try:
        if args.command == "build":
            return _build(args)
        if args.command == "serve":  # generator/serve.py
            from generator.serve import serve

            return serve(args)
        if args.command == "pdf":
            from generator.pdf import export

            export(args.out, args.config, quiet=args.quiet)
            return 0
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: nothing was changed, the previous site is as it was", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug, not bad input: still one line unless asked for details
        if args.verbose:
            raise
        print(f"internal error: {type(exc).__name__}: {exc} (run again with --verbose for the traceback)", file=sys.stderr)
        return 1
    return 0


def build_from_args(args: argparse.Namespace, progress=None):
    """The BuildResult of `build` with parsed arguments; UserError for bad input (generator/serve.py calls it too)."""
    from generator.build import build
    from generator.progress import Progress
    from generator.runners import EncoderDecoderInputs, run_encoder_decoder

    wanted = MODELS if args.model == "all" else (args.model,)
    runners = {}
    if "encoder-decoder" in wanted:
        sentences = {k: v for k, v in (("src", args.src), ("tgt", args.tgt)) if v is not None}  # else the seed's
        opts = EncoderDecoderInputs(seed=args.seed, device=args.device, layer=args.layer, n_layers=args.layers,
                                    d_model=args.d_model, n_heads=args.heads, d_ff=args.d_ff, **sentences)
        runners["encoder-decoder"] = lambda report, opts=opts: run_encoder_decoder(report, opts)
    if "vit" in wanted:
        from generator.runners import VitInputs, run_vit

        vit_opts = VitInputs(image=args.image, weights=args.weights, seed=args.seed, device=args.device, layer=args.layer, size=args.vit_size)
        runners["vit"] = lambda report, opts=vit_opts: run_vit(report, opts)
    return build(args.out, runners, progress or Progress(enabled=False if args.quiet else None))


def _build(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    result = build_from_args(args)
    if args.pdf:
        from generator.pdf import export

        export(args.out, DEFAULT_DOCS.parent / "mkdocs.yml", quiet=args.quiet)
    if not args.quiet:
        print(f"wrote {', '.join(result.reports)} into {args.out} in {time.perf_counter() - started:.1f} s; browse with: mkdocs serve")
        for failure in result.failed_checks:
            print(f"warning: check failed: {failure}", file=sys.stderr)
    return 0
