"""Weight-aware checks on a trace: the `nn.Module` calls a marked line made (capture.ModuleCall) give a snapshot's
checks the weights a trace otherwise lacks, and the inputs no snapshot shows.

A check declares, in ``TRACE.calls`` (``checks.TraceUse``), which of its fields a module call of the marked line can
stand for: its module (``LinearOf.module``: the Linear the line called, rebuilt from the call's own parameters), a
parameter (an Embedding's ``weight``), or a tensor (the call's ``input``, where no captured snapshot shows it); a
check whose claim reads the calls in another form picks it (``Check.bound_by`` with ``LineCalls``). So ``Q = x·W_q + b``
is recomputed from the Linear's own weights and the snapshot that should feed it where one is captured: K computed from
another tensor fails there, the detail saying the module on its own input reproduces it. A user's own LayerNorm is
recomputed with the reference formula from its own gain and bias.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import torch

from transformer_trace.checks import Check, HeadsRejoin, RowEquals, SumOf, close
from transformer_trace.checks.calls import ConsumedImage, ConvPatches, HeadsOfRead, PatchChain, SumWithCall
from transformer_trace.trace.reading.activated_before import activated_linear
from transformer_trace.trace.reading.attention_calls import AttentionInputs, attention_binding
from transformer_trace.trace.reading.attention_rows import attention_call_rows
from transformer_trace.trace.reading.learned_positions import learned_positions
from transformer_trace.trace.reading.rebuilt import embedding_table, looks_like, rebuild
from transformer_trace.trace.reading.rows import normalised_capture, pooled_from, pooled_norm, pooled_scorer
from transformer_trace.sources import ModuleRef, ParamRef, Ref, TensorDict
from transformer_trace.trace.child.protocol import FED_AT, ModuleKind
from transformer_trace.trace.reading.call_layout import GRID_FLATTENED, in_order
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.normed_projection import projection_normed_per_head
from transformer_trace.trace.reading.positions_read import added_to_read
from transformer_trace.trace.reading.products import PRODUCT
from transformer_trace.trace.reading.shared_heads import heads_merged
from transformer_trace.trace.reading.summed_calls import operands_summed
from transformer_trace.trace.reading.sum_normed import sum_normed_on_line
from transformer_trace.trace.reading.binding import Bound, Given
from transformer_trace.trace.reading.input_chain import layers_of_input
from transformer_trace.trace.reading.same_tensors import equal_tensors
from transformer_trace.trace.reading.shared_projection import OwnKeyProjection, one_linear

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.trace.reading.pages import SnapshotReading



@dataclass(frozen=True)
class LineCalls:
    """The module calls a traced marked line made, as the checks' ``CallBinder``: one method per form of binding, and
    each check picks its own (``Check.bound_by``: a head split its whole projections, a residual sum its sublayer's
    output, a row its sequence, any other the fields it declares in ``TRACE.calls``). ``source``: the captured
    tensors; ``main``: the step's tensor; ``known``: modules other marked lines called (the token embedding a tied
    output head shares), by catalogue name."""

    calls: Sequence[ModuleCall]
    source: TensorDict
    main: torch.Tensor | None
    known: dict[str, Any] | None = None
    order: tuple[int, ...] | None = None  # the axis order the step is read in (reading/call_layout.py)

    def declared(self, check: Check) -> Bound | None:
        if check.TRACE.model_image:
            return _image_consumed(check, self.source, self.known or {})
        if (positions := added_to_read(check, self.calls, self.source)) is not None:
            return positions  # the positions added to a local no snapshot shows (a norm in the patcher before)
        if (rows := attention_call_rows(check, self.calls, self.source, self.main)) is not None:
            return rows  # an nn.MultiheadAttention's output marked at the heads' concatenation (its inside hidden)
        return _declared(check, self.calls, self.source, self.main, self.known, self.order)

    def projections(self, check: HeadsRejoin) -> Bound | None:
        return _projections_called(check, self.calls, self.source)

    def operand(self, check: SumOf) -> Bound | None:
        if (summed := operands_summed(check, self.calls, self.source, self.main, self.order)) is not None:
            return Bound(summed[0], Given(self.source, {**self.source.tensors, **summed[1]}), None, summed[2])
        return (_operand_called(check, self.calls, self.source, self.main, self.order)
                or sum_normed_on_line(check, self.calls, self.source, self.order))

    def row(self, check: RowEquals) -> Bound | None:
        return _row_of_read(check, self.calls, self.source, self.main)

    def positions(self, check: Check) -> Bound | None:
        return learned_positions(check, self.calls, self.source, self.main)


def bind(check: Check, calls: Sequence[ModuleCall], source: TensorDict, main: torch.Tensor | None,
         known: dict[str, Any] | None = None, order: tuple[int, ...] | None = None) -> Bound | None:
    """``check`` with what the marked line's module calls give it, in the form the check reads (``LineCalls``); None
    where they give nothing."""
    return check.bound_by(LineCalls(calls, source, main, known, order))


def _declared(check: Check, calls: Sequence[ModuleCall], source: TensorDict, main: torch.Tensor | None,
              known: dict[str, Any] | None, order: tuple[int, ...] | None = None) -> Bound | None:
    """``check`` with the fields it declares in ``TRACE.calls`` taken from the marked line's module calls (their inputs
    read in the step's layout, ``order``); None where it declares none or the line made no call of the kind."""
    wanted = check.TRACE.calls
    kinds = {kind for kind, _ in wanted.values()}
    # (a Linear shared by the heads, called on the stream split into them: read on the merged heads, shared_heads.py)
    # (not on a grid of tokens read flattened: its (B, H', W', X) calls are no heads)
    chosen = {kind: call if order == GRID_FLATTENED else heads_merged(call) for kind in kinds
              if (call := _call_of(kind, calls, main)) is not None}
    if not chosen and check.TRACE.activated and (activated := activated_linear(calls, main)) is not None:
        chosen = {ModuleKind.LINEAR: activated}  # the Linear the line activated: the MLP's hidden step
    if not chosen and ModuleKind.LINEAR in kinds and (normed := projection_normed_per_head(calls, main)) is not None:
        chosen = {ModuleKind.LINEAR: normed}  # the projection a norm over the head size follows on the line
    if not chosen:
        if ModuleKind.LINEAR not in kinds:
            return None
        return (_patches(check, calls, source, main) or _patch_chain(check, calls, source, main)
                or _attention(check, calls, source, main)
                or _split_of_read(check, calls, source))
    tensors, modules, params = dict(source.tensors), {}, dict[str, torch.Tensor]()
    taken, own_input, missing, words = [], None, [], list[tuple[str, str]]()
    stood_in: list[tuple[str, torch.Tensor]] = []
    for name, (kind, part) in wanted.items():
        call = chosen.get(kind)
        value = getattr(check, name)
        if call is None:
            continue
        if part == "module" and (module := rebuild(call, kind)) is not None:
            modules[source.name(value)] = module
            written = call.attrs.get(PRODUCT)  # a product with a parameter the line read (products.py)
            fed = call.attrs.get(FED_AT) is not None  # made by an unmarked statement the line read (feeders.py)
            taken.append(f"the parameters of {'the unmarked product' if fed else 'its product'} `{written}`"
                         + (" before it, whose output it read" if fed else "") if written is not None else
                         f"the weights of the {call.module} an unmarked statement before it called, whose output it "
                         "read" if fed else f"the weights of the {call.module} it called")
            words.append((source.name(value), f"the product `{written}`" + (" on a statement before your line"
                                                                             if fed else "") if written is not None else
                          f"the {call.module} an unmarked statement before your line called" if fed else
                          f"the {call.module} your line called"))
        elif part == "weight" and isinstance(value, ParamRef) and (weight := call.params.get("weight")) is not None:
            params[source.name(value)] = weight
            taken.append(f"the weight of the {call.module} it called")
            words.append((source.name(value), f"the weight of the {call.module} your line called"))
        elif part in ("input", "weight") and (tensor := call_tensor(call, part)) is not None:
            refs = value if isinstance(value, tuple) else (value,)
            absent = [source.name(ref) for ref in refs if not source.has(ref)]
            synthetic = Ref(f"{source.name(refs[0])}@{call.module}.{part}")
            tensors[synthetic.template] = in_order(tensor, order) if part == "input" else tensor
            variant = check.reading(name, synthetic)
            if absent:
                check = variant
                missing += absent
                if part == "input" and not isinstance(value, tuple):  # the input is that tensor (not a sum of them)
                    stood_in.append((absent[0], tensor))
            elif part == "input":
                own_input = variant
                if not isinstance(value, tuple):  # a captured input: what the call read, for its readers to agree
                    stood_in.append((source.name(refs[0]), tensor))
    if not modules and not params and not missing:
        return None
    given = Given(source, tensors, modules={**(known or {}), **modules}, params=params)
    note = "; ".join(dict.fromkeys(taken))
    if missing:
        at = "that call" if any(c.attrs.get(FED_AT) is not None for c in chosen.values()) else \
            "the module call on the marked line"
        note += ("; " if note else "") + f"its input taken from {at} (no snapshot shows it)"
    return Bound(check, given, own_input, note, stood_in=tuple(stood_in), said=tuple(words))


def _patches(check: Check, calls: Sequence[ModuleCall], source: TensorDict, main: torch.Tensor | None) -> Bound | None:
    """A Linear step (the patch embedding) the line computed with a Conv2d: checked as that convolution, from its
    own weights and the image it was called with."""
    conv = _call_of(ModuleKind.CONV2D, calls, main)
    module, out = getattr(check, "module", None), _output(check)
    if conv is None or not isinstance(module, ModuleRef) or out is None or not conv.inputs:
        return None
    params, attrs, image_read = conv.params, conv.attrs, conv.inputs[0]
    if image_read is None or (weight := params.get("weight")) is None or weight.dim() != 4:
        return None
    image = f"{source.name(module)}@{conv.module}.input"
    layer = SimpleNamespace(weight=weight, bias=params.get("bias"), stride=tuple(attrs.get("stride", (1, 1))),
                            padding=tuple(attrs.get("padding", (0, 0))), dilation=tuple(attrs.get("dilation", (1, 1))),
                            groups=attrs.get("groups", 1))
    tensors = {**source.tensors, image: image_read}
    given = Given(source, tensors, modules={source.name(module): layer})
    return Bound(ConvPatches(out=out, x=Ref(image), module=module), given, None,
                 f"the weights of the {conv.module} it called, on the image it was called with",
                 said=((source.name(module), f"the {conv.module} your line called"),))


def _patch_chain(check: Check, calls: Sequence[ModuleCall], source: TensorDict,
                 main: torch.Tensor | None) -> Bound | None:
    """A Linear step (the patch embedding) whose line called a chain of modules, each fed the previous one's output: a
    rearrange of the image into rows, then LayerNorms and Linears, the last giving the step (an nn.Sequential)."""
    module, out = getattr(check, "module", None), _output(check)
    ends = [c for c in calls if c.kind in (ModuleKind.LINEAR, ModuleKind.LAYER_NORM) and c.outputs
            and holds_output(c.outputs[0], main)]
    if not isinstance(module, ModuleRef) or out is None or not ends:
        return None
    chain = [ends[-1]]
    made = [c for c in calls if c.kind not in (ModuleKind.LOCAL, ModuleKind.READ)]  # calls, not tensors the line read
    while chain[0].inputs and (fed := next((c for c in made
                                            if c.outputs and equal_tensors(c.outputs[0], chain[0].inputs[0])
                                            and all(c is not d for d in chain)), None)) is not None:
        chain.insert(0, fed)
    first, layers = chain[0], chain[1:]
    built = [rebuild(c, c.kind) for c in layers]
    first_in, first_out = (first.inputs or [None])[0], (first.outputs or [None])[0]
    if first.kind != ModuleKind.USER:  # no rearrange on the line: the rows were made earlier, the step's input
        return layers_of_input(check, chain, source)
    if (first.params or first_in is None or first_out is None
            or first_in.dim() != 4 or not any(c.kind == ModuleKind.LINEAR for c in layers) or None in built):
        return None
    name = source.name(module)
    refs = tuple(ModuleRef(f"{name}@{c.module}.{i}") for i, c in enumerate(layers))
    tensors = {**source.tensors, f"{name}@{first.module}.input": first_in,
               f"{name}@{first.module}.output": first_out}
    given = Given(source, tensors, modules={ref.template: layer for ref, layer in zip(refs, built)})
    chain_text = " → ".join(c.module for c in chain)
    return Bound(PatchChain(out=out, x=Ref(f"{name}@{first.module}.input"),
                            patches=Ref(f"{name}@{first.module}.output"), layers=refs), given, None,
                 f"the modules it called ({chain_text}), with their own weights, on the image it was called with")


def _attention(check: Check, calls: Sequence[ModuleCall], source: TensorDict,
               main: torch.Tensor | None) -> Bound | None:
    """A Linear step (the output projection) that is an nn.MultiheadAttention's output: the projection's weights and
    the heads' concatenation recomputed from the call, and the call's inputs checked against each other."""
    call = _call_of(ModuleKind.MULTIHEAD_ATTENTION, calls, main)
    module = getattr(check, "module", None)
    wanted = check.TRACE.calls
    field_name = next((name for name, (_, part) in wanted.items() if part == "input"), None)
    if call is None or not isinstance(module, ModuleRef) or field_name is None:
        return None
    found = attention_binding(call, module, source.name(module))
    if found is None:
        return None
    layer, derived, self_attention = found
    refs = {key.rsplit(".", 1)[1]: Ref(key) for key in derived}
    given = Given(source, {**source.tensors, **derived}, modules={source.name(module): layer})
    fed = getattr(check, field_name)
    variant = check.reading(field_name, refs["concat"])
    inputs = AttentionInputs(queries=refs["query"], keys=refs["key"], values=refs["value"],
                             self_attention=self_attention)
    note = f"the weights of the {call.module} it called"
    said = ((source.name(module), f"the {call.module} your line called"),)
    if source.has(fed):
        return Bound(check, given, variant, note, (inputs,), said=said)
    return Bound(variant, given, None, f"{note}; {source.name(fed)} derived from the call (the heads' concatenation, "
                 "recomputed from its inputs and weights)", (inputs,), said=said)


def _split_of_read(check: Check, calls: Sequence[ModuleCall], source: TensorDict) -> Bound | None:
    """A head split (q, k or v per head) whose projection ran on an earlier line: checked against the projection the
    marked line read (its local tensors as they were before it ran)."""
    part, out = getattr(check, "part", None), _output(check)
    read = [c for c in calls if c.kind == ModuleKind.LOCAL and c.outputs and all(t is not None for t in c.outputs)]
    if not check.TRACE.reads_locals or part is None or out is None or len(read) != 1:
        return None  # none, or several tensors read: which one is the projection is not known
    names = [f"{read[0].module}@read.{i}" for i in range(len(read[0].outputs))]
    tensors = {**source.tensors, **dict(zip(names, map(present, read[0].outputs)))}
    given = Given(source, tensors)
    module = getattr(check, "module", None)  # the fused projection: its output, where a snapshot shows it
    fused = Ref(source.name(module)) if isinstance(module, ModuleRef) and source.has(Ref(source.name(module))) else None
    return Bound(HeadsOfRead(out=out, parts=tuple(map(Ref, names)), part=part, fused=fused), given, None,
                 f"`{read[0].module}`, as the line read it")


def _projections_called(check: HeadsRejoin, calls: Sequence[ModuleCall], source: TensorDict) -> Bound | None:
    """A head split whose whole projections no snapshot shows: each taken from the Linear call (or the local tensor
    the marked line read) whose output holds that head tensor's values, so the split itself is checked; in a
    self-attention, the three Linears' inputs are checked to be one tensor."""
    tensors, full, taken, inputs = dict(source.tensors), list(check.full), [], {}
    # every call whose output holds each part's values, q, k and v (several where the parts are equal, as clones of
    # one untrained Linear make them)
    made: list[list[ModuleCall]] = [[] for _ in check.heads]
    for k, (heads, whole) in enumerate(zip(check.heads, check.full)):
        if source.has(whole) or not source.has(heads):
            continue
        holding = [(call, output) for kind in (ModuleKind.LINEAR, ModuleKind.LOCAL) for call in calls
                   if call.kind == kind for output in call.outputs if _holds_exactly(output, source.t(heads))]
        if not holding:
            return None
        call, output = holding[0]
        made[k] = [c for c, _ in holding]
        name = f"{source.name(whole)}@{call.module}.output"
        tensors[name], full[k] = present(output), Ref(name)
        taken.append(f"{source.name(whole)} from {'the output of the ' if call.kind == 'linear' else '`'}"
                     f"{call.module}{' it called' if call.kind == 'linear' else '`, as the line read it'}")
        if call.kind == ModuleKind.LINEAR and call.inputs and call.inputs[0] is not None:
            inputs[k] = f"{source.name(whole)}@{call.module}.input"
            tensors[inputs[k]] = call.inputs[0]
    if not taken:
        return None
    also: tuple[Check, ...] = ()
    if len(inputs) == 3 and "cross" not in source.name(check.heads[0]):  # a self-attention: q, k, v of one tensor
        also = (AttentionInputs(queries=Ref(inputs[0]), keys=Ref(inputs[1]), values=Ref(inputs[2]),
                                self_attention=True),)
    if (weight := one_linear(made)) is not None:  # the keys' line called the queries' Linear (shared_projection.py)
        names = [f"{source.name(whole)}@Linear.weight" for whole in check.full[:2]]
        tensors.update(dict.fromkeys(names, weight))
        also += (OwnKeyProjection(query_heads=check.heads[0], key_heads=check.heads[1], query_weight=Ref(names[0]),
                                  key_weight=Ref(names[1])),)
    return Bound(dataclasses.replace(check, full=tuple(full)), Given(source, tensors), None,
                 f"no snapshot shows the whole projections: {'; '.join(taken)}", also)


def _operand_called(check: SumOf, calls: Sequence[ModuleCall], source: TensorDict, main: torch.Tensor | None,
                    order: tuple[int, ...] | None) -> Bound | None:
    """A residual sum whose sublayer output (its last operand) no snapshot shows, where the line's last module call
    (``x + mlp(x)``: the MLP, a Linear or a module of the user's) gives a tensor of the sum's shape: that operand taken
    from its output. The residual's input is never taken so (a call's output is a sublayer's, not the stream's), nor
    an output that is the step's tensor itself: a module that adds the residual inside (a SublayerConnection) and a
    sublayer whose residual was dropped look alike from the line."""
    absent = [k for k, ref in enumerate(check.operands) if not source.has(ref)]
    last = calls[-1] if calls else None
    if (absent != [len(check.operands) - 1] or last is None or last.kind not in (ModuleKind.LINEAR, ModuleKind.USER)
            or not last.outputs or main is None or last.outputs[0] is None
            or tuple(last.outputs[0].shape) != tuple(main.shape) or equal_tensors(last.outputs[0], main)):
        return None
    missing = source.name(check.operands[absent[0]])
    name = f"{missing}@{last.module}.output"
    operands = list(check.operands)
    operands[absent[0]] = Ref(name)
    given = Given(source, {**source.tensors, name: in_order(last.outputs[0], order)})
    # the one LayerNorm whose output the line fed a sublayer with (pre-norm): its input must be the stream
    fed = [call for call in calls if _norm_kind(call) and call.inputs and call.outputs
           and isinstance(call.inputs[0], torch.Tensor) and tuple(call.inputs[0].shape) == tuple(main.shape)
           and any(other is not call and other.inputs and equal_tensors(other.inputs[0], call.outputs[0])
                   for other in calls)]
    fed_input = fed[0].inputs[0] if len(fed) == 1 else None
    normalised = Ref(f"{missing}@{fed[0].module}.input") if fed_input is not None else None
    if normalised is not None and fed_input is not None:
        given = Given(source, {**given.tensors, normalised.template: in_order(fed_input, order)})
    return Bound(SumWithCall(out=check.out, operands=tuple(operands), normalised=normalised), given, None,
                 f"{missing} taken from the output of the {last.module} the line called last (no captured snapshot "
                 "shows it)")


def _norm_kind(call: ModuleCall) -> bool:
    """A LayerNorm, or a module of the user's that looks like one (a gain and a bias of one axis each)."""
    params = [p for p in call.params.values() if isinstance(p, torch.Tensor)]
    return call.kind == ModuleKind.LAYER_NORM or (call.kind == ModuleKind.USER and 0 < len(params) <= 2
                                                  and all(p.dim() == 1 for p in params))


def _row_of_read(check: RowEquals, calls: Sequence[ModuleCall], source: TensorDict,
                 main: torch.Tensor | None) -> Bound | None:
    """A row taken from a sequence no snapshot shows (the final sequence of a model without a final LayerNorm): checked
    against the one sequence (B, N, D) the marked line read, with the LayerNorm the line applied (reading/rows.py); a
    row of a captured sequence the line normalised: against that sequence through the same norm."""
    pooled = (normalised_capture(calls, source.cpu(check.source), source.name(check.source))
              if source.has(check.source) else pooled_from(calls, main, source.tensors))
    # mean pooling may leave out a class token the run captured; a LayerNorm of the pooled mean is read with it
    check = dataclasses.replace(check, class_token=CLASS_TOKEN if source.has(CLASS_TOKEN) else None,
                                patches=next((ref for ref in PATCH_ROWS if source.has(ref)), None))
    sequence = pooled.sequence if pooled is not None else source.cpu(check.source) if source.has(check.source) else None
    norm = pooled_norm(calls, sequence) if sequence is not None else None
    scorer = pooled_scorer(calls, sequence) if sequence is not None else None  # sequence pooling's Linear
    modules = {name: module for name, module in ((POOLED_NORM, norm), (POOLED_SCORER, scorer)) if module is not None}
    check = dataclasses.replace(check, norm=ModuleRef(POOLED_NORM) if norm is not None else None,
                                scorer=ModuleRef(POOLED_SCORER) if scorer is not None else None)
    if pooled is None:
        if not modules and check.class_token is None and check.patches is None:
            return None
        said = f"the mean pooled through `{norm.called}`, the LayerNorm the line called" if norm is not None else ""
        return Bound(check, Given(source, source.tensors, modules), None,
                     said or ("the rows scored by the Linear the line called" if scorer is not None else ""))
    name = pooled.name if pooled.name not in source.tensors else f"{source.name(check.source)}@{pooled.name}"
    given = Given(source, {**source.tensors, name: pooled.sequence}, modules)
    return Bound(dataclasses.replace(check, source=Ref(name)), given, None, f"{source.name(check.source)} {pooled.how}")


CLASS_TOKEN = Ref("cls_token")  # the ViT catalogues' class token record (S05): where the run captured it, row 0 is it
# the ViT catalogues' patch records (S04, S03, S02), (B, N, …): as many rows as the sequence, no class token among them
PATCH_ROWS = (Ref("patch_embed.embed"), Ref("patch_embed.flat"), Ref("patch_embed.patches"))
POOLED_NORM = "@pooled norm"  # the LayerNorm a marked line applied to a pooled mean (rows.py pooled_norm)
POOLED_SCORER = "@pooled scorer"  # the Linear a marked line scored the rows with (rows.py pooled_scorer)


def _holds_exactly(output: torch.Tensor | None, heads: torch.Tensor) -> bool:
    """Whether a call's output holds the values of ``heads`` (as many, alike once sorted): its whole projection."""
    return output is not None and output.numel() == heads.numel() and output.dim() == 3 and holds_output(output, heads)


def _image_consumed(check: Check, source: TensorDict, known: dict[str, Any]) -> Bound | None:
    """The model's input image, as marked, checked against the image a marked line's patch embedding was called with
    (``known[IMAGE]``, from ``modules_called``)."""
    out = _output(check)
    if IMAGE not in known or out is None:
        return None
    name = f"{source.name(out)}@patch embedding.input"
    given = Given(source, {**source.tensors, name: known[IMAGE]})
    return Bound(check, given, None, "", (ConsumedImage(out=out, fed=Ref(name)),))


def _output(check: Check) -> Ref | None:
    """The tensor ``check``'s claim is about (its ``out`` field, which every check a module call can stand for has;
    not every check has one); None for a check without."""
    out = getattr(check, "out", None)
    return out if isinstance(out, Ref) else None


IMAGE = "@image"  # ``modules_called``'s key for the image a patch embedding was called with

# The modules every marked line's calls give, by catalogue name (``modules_called``): what a traced run answers
# ``module()`` and ``parameter()`` from (trace/reading/run.py ``TracedRun``)
CalledModules = dict[str, Any]


def modules_called(pages: list[SnapshotReading], source: TensorDict) -> CalledModules:
    """The modules every marked line's calls give, by catalogue name (an embedding's ``tok_emb`` from the weight bound
    to ``tok_emb.weight``): what a check on another line may read; under ``IMAGE``, the image a patch embedding was
    called with, where its line ran as often as every line marking the input image (one forward pass each)."""
    known: CalledModules = {}
    ran = {len(page.hit_values[0]) for page in pages if page.captured and page.hit_values
           and any(check.TRACE.model_image for check in getattr(page.snap, "checks", ()))}
    for page in pages:
        if not page.captured or not page.calls:
            continue
        line = LineCalls(page.calls, source, page.main_as_called)  # one binder for the page's checks
        for check in getattr(page.snap, "checks", ()):
            bound = check.bound_by(line)
            if (bound is not None and isinstance(bound.check, (ConvPatches, PatchChain)) and page.hit_values
                    and ran == {len(page.hit_values[0])}):
                known[IMAGE] = bound.source.t(bound.check.x)
            if bound is not None:
                known.update(bound.given.modules)
                known.update({name.removesuffix(".weight"): SimpleNamespace(weight=weight)
                              for name, weight in bound.given.params.items() if name.endswith(".weight")})
    return known


def call_tensor(call: ModuleCall, part: str) -> torch.Tensor | None:
    if part == "input":
        return call.inputs[0] if call.inputs else None
    return call.params.get(part)


def _call_of(kind: str, calls: Sequence[ModuleCall], main: torch.Tensor | None) -> ModuleCall | None:
    """The call of ``kind`` the step's tensor is the output of (its values, in any layout; or, for a fused projection,
    a third of them), the shallowest and last; None where no call's output is the step (a LayerNorm after the Linear:
    the Linear's output is not the step)."""
    if kind == ModuleKind.READ:  # a weight the line passes to functional code: the last with the step's width
        read = [c for c in calls if c.kind == ModuleKind.READ and c.params["weight"] is not None and main is not None
                and c.params["weight"].shape[-1:] == main.shape[-1:]]
        return read[-1] if read else _parameter_of_call(calls, main)
    found = [c for c in calls if (c.kind == kind or (c.kind == ModuleKind.USER and looks_like(kind, c)))
             and c.outputs and holds_output(c.outputs[0], main)]
    if not found:
        return None
    depth = min(c.depth for c in found)
    call = [c for c in found if c.depth == depth][-1]
    table = embedding_table(call) if kind == ModuleKind.EMBEDDING and call.kind == ModuleKind.USER else None
    return call if table is None else dataclasses.replace(call, params={"weight": call.params[table]})  # its table


def _parameter_of_call(calls: Sequence[ModuleCall], main: torch.Tensor | None) -> ModuleCall | None:
    """The one tensor parameter of a module of the user's that the line called to make the step and that holds no
    other (``self.positional_embedding(x)``, adding its ``pos_embedding``), of the step's width: as a weight the line
    read; None where there is no such call, or several."""
    found = []
    for call in calls:
        params = [p for p in call.params.values() if isinstance(p, torch.Tensor)]
        if (call.kind == ModuleKind.USER and call.depth == 1 and len(params) == 1 and main is not None
                and params[0].shape[-1:] == main.shape[-1:] and call.outputs and holds_output(call.outputs[0], main)):
            found.append(dataclasses.replace(call, kind=ModuleKind.READ, params={"weight": params[0]}))
    return found[0] if len(found) == 1 else None


def holds_output(output: torch.Tensor | None, main: torch.Tensor | None) -> bool:
    """Whether a call's output is the step's tensor, in whatever layout the line gave it (its values sorted alike),
    or q, k and v side by side (three times as many values), or k and v (twice as many, one of the two halves of its
    last axis the step: a fused k/v projection split on the line)."""
    if output is None or main is None or not output.is_floating_point() or not main.is_floating_point():
        return False
    if output.numel() == 3 * main.numel():
        return True
    if output.numel() == 2 * main.numel() and output.shape[-1] % 2 == 0:
        return any(holds_output(half, main) for half in output.chunk(2, dim=-1))
    if output.numel() != main.numel():
        return False
    values, step = output.double().flatten().sort().values, main.double().flatten().sort().values
    # or through a ReLU on the same line (`relu(fc1(x))`: the step is the activation of the call's output)
    return close(values, step, "")[0] or (bool((step >= 0).all()) and close(values.clamp_min(0), step, "")[0])


def present(tensor: torch.Tensor | None) -> torch.Tensor:
    assert tensor is not None, "a module call's tensor its caller found copied (its filter asked `is not None`)"
    return tensor
