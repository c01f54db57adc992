"""Which use a hit of a line shared by several snapshots is ("# Snapshot #10 or #24 or #33": one attention function
for the encoder's self-attention, the decoder's masked self-attention and the cross-attention), told from the
nn.Modules running it (read at each such hit by running_module.py in the script's interpreter). The rule:

1. The attention module is the innermost module on the running path whose attribute or class name says attention
   (attn, attention, mha, multihead, msa) and that owns a projection (a Linear-like child, or a matrix parameter of
   its own): a block around the attention (whisper's `ResidualAttentionBlock`, called with the encoder output) owns
   none, nor does a scaled-dot-product module inside it (called with q, k and v, which differ). Where none of them
   owns one (or the path does not say), the outermost of them whose class name does not also say block, layer or
   residual; else the innermost module. A line that only a layer runs (a class saying block, layer or residual: its
   residual sums, not attention) is its stage's, whatever the layer was called with.
2. Self or cross: the inputs it was called with decide. A key input other than its query input (another tensor of
   the query's rank and feature size, not equal to it) is cross-attention; the same (or an equal) input, or a single
   input, is self-attention. Where the arguments are unknown (a `forward` called directly), its attribute name
   decides: self, slf, masked, causal -> self-attention; cross, src, enc, context, memory -> cross-attention. When
   inputs and name disagree, the hit is not told, but for one case: a module outside the encoder whose name says
   cross-attention, called with its key input equal to its query input, is the cross-attention fed the wrong input
   (``Told.misfed``: K and V from the decoder where the encoder output belongs), and so is, where no module of the
   decoder reads as its cross-attention, the second attention module of a decoder layer whose two attention modules
   both read as self-attention (a decoder layer runs its masked self-attention, then its cross-attention).
3. Encoder or decoder: the modules above the attention module, outermost first, by attribute and class name
   (enc..., Encoder... / dec..., Decoder...; a name with both, such as EncoderDecoder, says nothing). When they name
   both, or neither and the line's snapshots have more than one self-attention use, the hit is not told.
   Cross-attention is the decoder's: a cross-attention the modules above name the encoder's (a Perceiver's latent
   array reading the input) is no use of the numbering, its hits left out and said so.

4. In a catalogue without those uses (the ViT's, the GPT's), a line shared by residual sums ("# BREAKPOINT S16 or
   S19": one ``x += res`` in a ``ResidualAdd(fn)`` wrapper that runs only inside an nn.Sequential) is told by the
   sublayer the module running it holds: an attention module (by attribute or class name) and no projection outside
   it, or projections and no attention (an MLP); each snapshot's is the sublayer output its check adds last. A module
   that holds both (a whole block) does not tell.
5. In the encoder–decoder catalogue, a line shared by residual sums of one stage (T5's ``Residual(fn)`` wrapper:
   ``return self.fn(x) + x  # Snapshot #14 or #19 or #29 or #36 or #40``), which rule 3 cannot tell apart, is told
   by the stage the modules above it name and the sublayer the wrapper holds: an MLP, or an attention module, in a
   decoder layer the first its masked self-attention and the second its cross-attention (rule 2's order).

A hit that is not told is not guessed: the overview says why (``by_caller`` then falls back to the callers' lines,
when there are as many as snapshots, and says that too)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformer_trace.trace.reading.capture import Notice

if TYPE_CHECKING:
    from transformer_trace.catalogue import Report, Snapshot
    from transformer_trace.trace.markers import Marker
    from transformer_trace.trace.reading.capture import Hit

ENCODER_SELF, DECODER_SELF, CROSS = "encoder self-attention", "decoder self-attention", "cross-attention"
# a cross-attention inside the encoder (a Perceiver's latent array reading the input): no snapshot of the numbering
ENCODER_CROSS = "encoder's cross-attention"

_ATTENTION = re.compile(r"attn|attention|mha|multihead|msa", re.I)
_WRAPPER = re.compile(r"block|layer|residual", re.I)  # a class that wraps the attention (a layer), not the attention
_SELF_NAME = re.compile(r"self|slf|masked|causal", re.I)
_CROSS_NAME = re.compile(r"cross|src|enc|context|memory", re.I)
_ENCODER, _DECODER = re.compile(r"enc", re.I), re.compile(r"dec", re.I)


def snapshot_use(snap: Snapshot) -> str | None:
    """The use a catalogue snapshot belongs to: cross-attention when its tensors are the cross-attention's, else its
    stage's (encoder or decoder) self-attention; None in a catalogue without encoder and decoder stages."""
    if "cross" in " ".join(ref.template for ref in snap.tensors):
        return CROSS
    return {"encoder": ENCODER_SELF, "decoder": DECODER_SELF}.get(snap.stage)


@dataclass(frozen=True)
class Told:
    """One hit's use (None: not told), the module that ran it, and what decided."""

    use: str | None
    module: str  # "decoder.layers.0.src_attn (MultiHeadedAttention)"
    evidence: str
    # the modules the attention module runs in ("decoder.layers.0"): one layer's attentions share it
    layer: str = ""
    # a cross-attention called with its key input equal to its query input: why it is the cross-attention all the same
    misfed: str = ""
    inputs: str | None = None  # what its inputs said ("same": its key input is its query input), where they decided


def hit_use(path: list | None, self_uses: int) -> Told:
    """The use of a hit from its running modules ``path`` ([[attribute, class, inputs, projects], ...], outermost
    first; ``projects`` absent in older results);
    ``self_uses``: how many self-attention uses the line's snapshots have."""
    if not path:
        return Told(None, "", "no nn.Module was running it")
    saying = [i for i, (attribute, cls, *_) in enumerate(path)
              if _ATTENTION.search(attribute) or _ATTENTION.search(cls)]
    projecting = [i for i in saying if len(path[i]) > 3 and path[i][3]]
    named = [i for i in saying if _ATTENTION.search(path[i][0]) or not _WRAPPER.search(path[i][1])]
    at = projecting[-1] if projecting else named[0] if named else len(path) - 1
    attribute, cls, inputs = path[at][:3]
    where = ".".join(entry[0] for entry in path[1:at + 1]) or f"the outermost module {cls}"
    module = f"{where} ({cls})" if path[1:at + 1] else where
    by_inputs = {"differ": CROSS, "same": "self", "one": "self", "causal": "self"}.get(inputs)
    by_name = "self" if _SELF_NAME.search(attribute) else CROSS if _CROSS_NAME.search(attribute) else None
    said = {"differ": "its key input differs from its query input", "same": "its key input is its query input",
            "one": "it was called with one input",
            "causal": "it was called with three projections and a causal mask",
            "projected": "it was called with three projections made before the call"}.get(inputs, "")
    sides = {side for a, c, *_ in path[:at] for side in [_side(a), _side(c)] if side}
    layer = ".".join(entry[0] for entry in path[1:at])
    if inputs == "same" and by_name == CROSS and sides != {"encoder"}:
        return Told(CROSS, module, f"its name `{attribute}` says cross-attention", layer,
                    f"{module}, the cross-attention by its name, was called with its key input equal to its query "
                    "input")
    if by_inputs and by_name and by_inputs != by_name:
        return Told(None, module, f"{said}, but its name `{attribute}` says "
                                  f"{'self' if by_name == 'self' else 'cross'}-attention")
    kind = by_inputs or by_name
    because = said or (f"its name `{attribute}`" if by_name else "")
    if at not in named and _WRAPPER.search(cls):  # a layer's own line (its residual sums): no attention runs it
        kind, because = "self", f"it runs in the layer {cls}, not in an attention module"
    if kind is None and sides == {"encoder"}:  # cross-attention is the decoder's: an encoder's attention is its own
        kind, because = "self", f"{said or 'its inputs and name do not say'}, and the encoder has no cross-attention"
    if kind is None:
        return Told(None, module, "neither its inputs nor its name say self- or cross-attention")
    if kind == CROSS and sides == {"encoder"}:  # the numbering's cross-attention is the decoder's: not this one
        return Told(ENCODER_CROSS, module, f"{because}, and it is in the encoder, whose steps have no cross-attention",
                    layer)
    if kind == CROSS:
        return Told(CROSS, module, because)
    if len(sides) == 1:
        side = sides.pop()
        return Told(ENCODER_SELF if side == "encoder" else DECODER_SELF, module, f"{because}, and it is in the {side}",
                    layer, inputs=inputs if by_inputs else None)
    if not sides and self_uses == 1:
        return Told("self", module, f"{because}, and the line's snapshots have one self-attention")
    return Told(None, module, f"{because}, but the modules around it name " +
                ("both the encoder and the decoder" if sides else "neither an encoder nor a decoder"))


def _side(name: str) -> str | None:
    encoder, decoder = bool(_ENCODER.search(name)), bool(_DECODER.search(name))
    return "encoder" if encoder and not decoder else "decoder" if decoder and not encoder else None


@dataclass
class ByModule:
    """A shared line's hits by the use their modules tell: ``groups`` (snapshot number -> its hits, in order, with
    what told each), ``outside`` (hits of a use none of the line's snapshots has), ``untold`` (hits not told)."""

    groups: dict[int, list[tuple[Hit, Told]]] = field(default_factory=dict)
    outside: list[tuple[Hit, Told]] = field(default_factory=list)
    untold: list[tuple[Hit, Told]] = field(default_factory=list)


def by_module(uses: dict[int, str | None], hits: list[Hit]) -> ByModule:
    """The hits of a shared line grouped by snapshot number (``uses``: number -> its use, snapshot_use) from the
    modules that ran them."""
    found = ByModule()
    if not uses or None in uses.values():  # a catalogue whose snapshots are not encoder / decoder / cross uses
        found.untold = [(hit, Told(None, "", "the report's snapshots are not told by use")) for hit in hits]
        return found
    self_numbers = [n for n, use in uses.items() if use != CROSS]
    for hit, told in _second_of_a_layer(uses, [(hit, hit_use(hit.module, len(self_numbers))) for hit in hits]):
        if told.use is None:
            found.untold.append((hit, told))
            continue
        number = self_numbers[0] if told.use == "self" else next((n for n, u in uses.items() if u == told.use), None)
        if number is None:
            found.outside.append((hit, told))
        else:
            found.groups.setdefault(number, []).append((hit, told))
    return found


def _second_of_a_layer(uses: dict[int, str | None], told: list[tuple[Hit, Told]]) -> list[tuple[Hit, Told]]:
    """The hits with their uses, where no hit reads as the cross-attention the line's snapshots include and a decoder
    layer ran two attention modules that both read as its self-attention: the second to run is its cross-attention,
    called without the encoder output (``Told.misfed``)."""
    if CROSS not in uses.values() or any(t.use == CROSS for _, t in told):
        return told
    first: dict[str, str] = {}  # per decoder layer: its attention module that ran first
    for _, t in told:
        if t.use == DECODER_SELF and t.layer:
            first.setdefault(t.layer, t.module)
    second = ("the second attention module of its decoder layer (a decoder layer runs its masked self-attention, "
              "then its cross-attention), was called with its key input equal to its query input")
    return [(hit, replace(t, use=CROSS, misfed=f"{t.module}, {second}"))
            if t.use == DECODER_SELF and t.inputs == "same" and first.get(t.layer, t.module) != t.module else (hit, t)
            for hit, t in told]


ATTENTION_RESIDUAL, MLP_RESIDUAL = "attention's residual sum", "MLP's residual sum"
# what the module running a hit holds (running_module.py ``_holds``) -> the residual sum it makes, and in words
_HELD = {"attention": (ATTENTION_RESIDUAL, "an attention module"), "mlp": (MLP_RESIDUAL, "an MLP")}


def snapshot_sublayer(snap: Snapshot) -> str | None:
    """The residual sum a catalogue snapshot is, by the sublayer output its check adds last (``{block}.attn.out``,
    ``{block}.mlp.out``): the attention's or the MLP's; None for a snapshot that is no residual sum."""
    for check in getattr(snap, "checks", ()):
        operands = getattr(check, "operands", ())
        parts = operands[-1].template.split(".") if operands else []
        sublayer = parts[-2] if len(parts) >= 2 and parts[-1] == "out" else ""
        if _ATTENTION.search(sublayer):
            return ATTENTION_RESIDUAL
        if sublayer == "mlp":
            return MLP_RESIDUAL
    return None


def by_sublayer(sublayers: dict[int, str], hits: list[Hit]) -> ByModule:
    """The hits of a line shared by residual sums grouped by snapshot number (``sublayers``: number -> the residual sum
    it is, ``snapshot_sublayer``), by the sublayer the module running each holds (rule 4)."""
    found = ByModule()
    numbers = {sublayer: number for number, sublayer in sublayers.items()}
    for hit in hits:
        path = hit.module or [["", "", None]]
        attribute, cls = ".".join(str(entry[0]) for entry in path[1:]), str(path[-1][1])
        module = f"{attribute} ({cls})" if attribute else cls
        held = _HELD.get(str(path[-1][4])) if len(path[-1]) > 4 else None
        if held is None:
            found.untold.append((hit, Told(None, module, "it holds both an attention module and an MLP, or neither")))
            continue
        told = Told(held[0], module, f"it holds {held[1]}")
        if held[0] in numbers:
            found.groups.setdefault(numbers[held[0]], []).append((hit, told))
        else:
            found.outside.append((hit, told))
    return found


def residual_use(snap: Snapshot) -> tuple[str, str] | None:
    """The residual sum an encoder–decoder snapshot is: its stage and the sublayer whose output its check adds last
    (("encoder", "self_attn"), ("decoder", "cross_attn"), ("decoder", "mlp")); None for one that is none."""
    for check in getattr(snap, "checks", ()):
        operands = getattr(check, "operands", ())
        parts = operands[-1].template.split(".") if operands else []
        if len(parts) >= 2 and parts[-1] == "out" and snap.stage in ("encoder", "decoder"):
            return snap.stage, parts[-2]
    return None


def by_stage_and_sublayer(residuals: dict[int, tuple[str, str]], hits: list[Hit]) -> ByModule:
    """The hits of a line shared by an encoder–decoder's residual sums grouped by snapshot number (``residuals``:
    number -> ``residual_use``), by the stage and the sublayer the wrapper running each holds (rule 5)."""
    found = ByModule()
    numbers = {residual: number for number, residual in residuals.items()}
    attentions: dict[str, int] = {}  # per decoder layer: how many of its attention sums ran
    for hit in hits:
        path = hit.module or [["", "", None]]
        attribute, cls = ".".join(str(entry[0]) for entry in path[1:]), str(path[-1][1])
        module = f"{attribute} ({cls})" if attribute else cls
        held = path[-1][4] if len(path[-1]) > 4 else None
        sides = {side for entry in path for side in (_side(str(entry[0])), _side(str(entry[1]))) if side}
        if held not in _HELD or len(sides) != 1:
            found.untold.append((hit, Told(None, module, "it holds neither one attention module nor one MLP, or the "
                                                         "modules around it name no one stage")))
            continue
        stage = sides.pop()
        sublayer, why = "mlp", "it holds an MLP"
        if held == "attention":
            layer = ".".join(str(entry[0]) for entry in path[1:-1])
            nth = attentions[layer] = attentions.get(layer, 0) + 1
            sublayer = "self_attn" if stage == "encoder" or nth == 1 else "cross_attn" if nth == 2 else ""
            why = ("it holds an attention module" if stage == "encoder" else
                   f"it holds the {'first' if nth == 1 else 'second'} attention module of its decoder layer (a "
                   "decoder layer runs its masked self-attention, then its cross-attention)")
        told = Told(f"{stage}'s {sublayer.replace('_attn', '-attention').replace('mlp', 'MLP')} residual sum",
                    module, f"{why}, and it is in the {stage}")
        if (stage, sublayer) in numbers:
            found.groups.setdefault(numbers[(stage, sublayer)], []).append((hit, told))
        else:
            found.outside.append((hit, told))
    return found


def _grouped(marker: Marker, hits: list[Hit], snaps: dict[int, Snapshot]) -> ByModule:
    """A shared line's hits by use (encoder, decoder, cross-attention: rules 1-3), or, in a catalogue without those,
    by the residual sum each is (rule 4)."""
    uses = {n: snapshot_use(snaps[n]) if n in snaps else None for n in marker.alternatives}
    sublayers = {n: snapshot_sublayer(snaps[n]) if n in snaps else None for n in marker.alternatives}
    if None in uses.values() and None not in sublayers.values() and len(set(sublayers.values())) == len(sublayers):
        return by_sublayer({n: s for n, s in sublayers.items() if s is not None}, hits)
    residuals = {n: residual_use(snaps[n]) if n in snaps else None for n in marker.alternatives}
    if len(set(uses.values())) < len(uses) and None not in residuals.values() \
            and len(set(residuals.values())) == len(residuals):  # residual sums one use cannot tell apart
        return by_stage_and_sublayer({n: r for n, r in residuals.items() if r is not None}, hits)
    return by_module(uses, hits)


def described(told: list[Told]) -> str:
    """"encoder.layers.0.attn (MultiHeadAttention), encoder.layers.1.attn (...): it was called with one input; it is
    in the encoder": the modules (three at most) and what decided the first."""
    modules = list(dict.fromkeys(t.module for t in told))
    shown = ", ".join(modules[:3]) + (f" and {len(modules) - 3} more" if len(modules) > 3 else "")
    return f"{shown}: {told[0].evidence}" if told[0].evidence else shown


def by_caller(marker: Marker, hits: list[Hit], catalogue: Report, notices: list[str],
              told_apart: list[str], misfed: dict[int, str] | None = None) -> list[tuple[Marker, list[Hit]]]:
    """A line shared by several snapshots ("#10 or #24 or #33"): its hits split by the use the nn.Module running each
    tells (shared_lines.py: encoder or decoder self-attention, or cross-attention), and said on the overview. Where a
    hit's use is not told: by the user's line that called it, the callers in the order they first called, one snapshot
    each, when there are as many; callers beyond the listed snapshots are left out (the seed's "#12 or #27" names the
    encoder's and the masked attention's heads, not the cross-attention's); with fewer callers than snapshots none is
    assigned, and the overview says why (``notices``, ``told_apart``: what the overview says, added to; ``misfed``:
    per snapshot number, why the cross-attention whose hits it took was fed the wrong input, added to)."""
    where = f"{Path(marker.file).name}:{marker.line}: {marker.text!r}"
    snaps = {snap.number: snap for snap in catalogue.snapshots}
    found = _grouped(marker, hits, snaps)
    if not found.untold:
        taken = [f"{catalogue.label(n)} takes the {'self-attention' if group[0][1].use == 'self' else group[0][1].use} "
                 f"({described([told for _, told in group])})" for n, group in found.groups.items()]
        if taken:
            told_apart.append(f"{where}, by the module running it: {'; '.join(taken)}")
        for n, group in found.groups.items():
            said = [told.misfed for _, told in group if told.misfed]
            if said and misfed is not None:
                misfed.setdefault(n, said[0])
        if found.outside:
            lines = sorted({f"{Path(hit.site[0]).name}:{hit.site[1]}" for hit, _ in found.outside if hit.site})
            notices.append(Notice("Hits not shown", f"{where} also ran as the {found.outside[0][1].use} "
                                           f"({described([told for _, told in found.outside])}; called at "
                                           f"{', '.join(lines)}): those hits belong to none of its "
                                           f"{len(marker.alternatives)} snapshots and are not shown"))
        return [(replace(marker, number=n, alternatives=()), [hit for hit, _ in found.groups[n]])
                for n in marker.alternatives if n in found.groups]
    sites: dict[Any, list[Hit]] = {}
    for hit in hits:
        sites.setdefault(hit.site, []).append(hit)
    untold = found.untold[0][1]
    why = f" ({untold.module + ': ' if untold.module else ''}{untold.evidence})"
    if len(sites) < len(marker.alternatives):
        callers = f"{len(sites)} line{'s' if len(sites) != 1 else ''}"
        notices.append(Notice("Not assigned", f"{where} was called from {callers} of your code for "
                                       f"{len(marker.alternatives)} snapshots, and the module running it does not "
                                       f"tell which use each hit is{why}, so its hits were not assigned; mark each "
                                       "caller's line instead"))
        return []
    if len(sites) > len(marker.alternatives):
        extra = [f"{Path(site[0]).name}:{site[1]}" for site in list(sites)[len(marker.alternatives):] if site]
        notices.append(Notice("Hits not shown", f"{where} was also called from {', '.join(extra)}: those "
                                       f"hits belong to none of its {len(marker.alternatives)} snapshots and are not "
                                       "shown"))
    if hits[0].module is not None:  # modules ran it but did not tell: say that the callers' lines did
        told_apart.append(f"{where}: told apart by the lines that called it, in the order they first called, "
                                  f"as the module running it does not tell{why}")
    return [(replace(marker, number=number, alternatives=()), group)
            for number, group in zip(marker.alternatives, sites.values())]
