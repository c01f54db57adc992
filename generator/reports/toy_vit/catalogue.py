"""The toy ViT report's catalogue: seed 004's walkthrough step by step, in its order (Steps 1–8), with its patch names
A–I.

Placeholder: {block} is the traced layer (the model has one; see ToyVitOptions.places).
"""

from transformer_trace.catalogue import Figure, Question, Snapshot, Stage
from transformer_trace.checks import (ContextHeads, EqualsParameter, LayerNormOf, LinearOf, PlusParameter,
                                      Probabilities,
                              ResidualBlock, RowEquals,
                              SameTensor, ScaledScores, SoftmaxRows, SumOf, TokensConcat)
from transformer_trace.figures import AttentionHeads, Positional
from transformer_trace.places import Place
from transformer_trace.reports.toy_vit.checks import (DotProducts, IsImage, PatchesTile, ProjectedHeads, ReadRowByRow,
                                                      ReluOf)
from transformer_trace.reports.toy_vit.figures import ClassBars, PatchGrid, QueryOverGrid, VerdictMap
from transformer_trace.sources import InputRef, ModuleRef, ParamRef, Ref
import transformer_trace.models.toy_vit as _model
from transformer_trace.models.toy_vit import MLP, EncoderBlock, PatchEmbedding, SelfAttention, ToyVisionTransformer

# Where the tensors are recorded: a place in the model (placeholders: the traced layer) and the module class there.
# ``place.POINT`` is the record name that class's declared point has at that place (generator/places.py).
model = Place("", ToyVisionTransformer)
patch_embed = Place("patch_embed", PatchEmbedding)
block = Place("{block}", EncoderBlock)
block_attn = Place("{block}.attn", SelfAttention)
block_mlp = Place("{block}.mlp", MLP)

DIMS_LEGEND = _model.LEGEND  # declared once, in the model file

STAGES = (
    Stage("patches", "Steps 1–2: patches", "The 6×6 image cut into nine 2×2 patches A–I, each read as a vector of 4 "
                                           "pixels."),
    Stage("embedding", "Steps 3–5: embeddings", "Each patch times E, [CLS] in front, the positional table added: x⁰."),
    Stage("attention", "Step 6a–6b: self-attention", "Queries, keys and values, E's scores and weights, and the new "
                                                     "representation of every token."),
    Stage("mlp", "Step 6c–6e: MLP and Add & Norm", "The two Add & Norm steps around the MLP, ending in the layer's "
                                                   "output x¹."),
    Stage("head", "Step 8: classification", "The [CLS] row read by the head: logits and probabilities for cat, dog and "
                                            "bird."),
)

QUESTIONS = (
    Question(1, "Why is the image cut into patches, and what does a patch vector hold?"),
    Question(2, "Why does the [CLS] token start at zero, and how does it end up knowing about the image?"),
    Question(3, "What does the positional table add, and what would attention miss without it?"),
    Question(4, "Why are E's attention weights so nearly equal, and what would make them sharper?"),
    Question(5, "What do the two Add & Norm steps do to a token's numbers?"),
    Question(6, "Where does the seed's hand arithmetic first go wrong, and how far does each slip travel?"),
)

_B = "{block}"

SNAPSHOTS = (
    Snapshot(number=1, title="Input image", variable="image", stage="patches", tensors=(model.IMAGE,),
             checks=(IsImage(pixels=InputRef("pixels")),), questions=(1,), figures=("patch_grid",)),
    Snapshot(number=2, title="Patches A–I", variable="patches", stage="patches", tensors=(patch_embed.PATCHES,),
             checks=(PatchesTile(image=model.IMAGE),), questions=(1,)),
    Snapshot(number=3, title="Flattened patches", variable="patch_vectors", stage="patches",
             tensors=(patch_embed.FLAT,),
             checks=(ReadRowByRow(source=patch_embed.PATCHES),), questions=(1, 6)),
    Snapshot(number=4, title="Projected embeddings (patch · E)", variable="projected_patch", stage="embedding",
             tensors=(patch_embed.EMBED,), checks=(LinearOf(x=patch_embed.FLAT, module=ModuleRef("patch_embed.proj")),),
             questions=(6,)),
    Snapshot(number=5, title="[CLS] token", variable="CLS", stage="embedding", tensors=(model.CLS_TOKEN,),
             checks=(EqualsParameter(parameter=ParamRef("class_token")),), questions=(2,)),
    Snapshot(number=6, title="Sequence with [CLS]", variable="sequence", stage="embedding", tensors=(model.TOKENS,),
             checks=(TokensConcat(cls=model.CLS_TOKEN, patches=patch_embed.EMBED),), questions=(2,)),
    Snapshot(number=7, title="Input x⁰ (embedding + position)", variable="x⁰", stage="embedding",
             tensors=(model.TOKENS_POS,),
             checks=(PlusParameter(x=model.TOKENS, parameter=ParamRef("pos_embedding")),), questions=(3,),
             figures=("positions",)),
    Snapshot(number=8, title="Queries Q", variable="Q", stage="attention", tensors=(block_attn.Q,),
             checks=(ProjectedHeads(x=model.TOKENS_POS, module=ModuleRef(f"{_B}.attn.query")),), questions=(4,)),
    Snapshot(number=9, title="Keys K", variable="K", stage="attention", tensors=(block_attn.K,),
             checks=(ProjectedHeads(x=model.TOKENS_POS, module=ModuleRef(f"{_B}.attn.key")),), questions=(4,)),
    Snapshot(number=10, title="Values V", variable="V", stage="attention", tensors=(block_attn.V,),
             checks=(ProjectedHeads(x=model.TOKENS_POS, module=ModuleRef(f"{_B}.attn.value")),), questions=(4,)),
    Snapshot(number=11, title="Raw attention scores Q·Kᵀ", variable="score", stage="attention",
             tensors=(block_attn.DOTS,),
             checks=(DotProducts(q_heads=block_attn.Q, k_heads=block_attn.K),), questions=(4, 6),
             figures=("query_scores",)),
    Snapshot(number=12, title="Scaled scores Q·Kᵀ/√hs", variable="score / √d", stage="attention",
             tensors=(block_attn.SCORES,),
             checks=(ScaledScores(q=block_attn.Q, k=block_attn.K),), questions=(4,),
             differs="The seed takes the softmax of the raw dot products; the model divides them by √hs first, as "
                     "scaled dot-product "
                     "attention does, so this page has no number of the seed's."),
    Snapshot(number=13, title="Attention weights", variable="attention_weights", stage="attention",
             tensors=(block_attn.PROBS,),
             checks=(SoftmaxRows(scores=block_attn.SCORES),), questions=(4, 6), figures=("query_weights", "attention")),
    Snapshot(number=14, title="New representation (weights · V)", variable="new_E", stage="attention",
             tensors=(block_attn.CONTEXT,),
             checks=(ContextHeads(probs=block_attn.PROBS, v_heads=block_attn.V),), questions=(4, 6)),
    Snapshot(number=15, title="After attention (output projection)", variable="after_attention", stage="attention",
             tensors=(block_attn.OUT,), checks=(LinearOf(x=block_attn.CONCAT, module=ModuleRef(f"{_B}.attn.proj")),),
             questions=(2, 6)),
    Snapshot(number=16, title="Residual after attention", variable="x⁰ + attention", stage="mlp",
             tensors=(block.RESIDUAL_1,),
             checks=(SumOf(operands=(block.INPUT, block_attn.OUT)),), questions=(5,),
             differs="The seed draws an Add & Norm after attention but its arithmetic skips it: it feeds the attention "
                     "output straight "
                     "into the MLP. The model adds x⁰ back and normalises, as drawn."),
    Snapshot(number=17, title="First Add & Norm", variable="LayerNorm(x⁰ + attention)", stage="mlp",
             tensors=(block.LN_1,),
             checks=(LayerNormOf(x=block.RESIDUAL_1, module=ModuleRef(f"{_B}.ln_1")),), questions=(5,),
             differs="Skipped by the seed's arithmetic (see the page before); here it is what the MLP reads."),
    Snapshot(number=18, title="MLP first layer (x·W₁ + b₁)", variable="xW₁ + b₁", stage="mlp", tensors=(block_mlp.FC1,),
             checks=(LinearOf(x=block.LN_1, module=ModuleRef(f"{_B}.mlp.fc1")),), questions=(5, 6)),
    Snapshot(number=19, title="ReLU", variable="hidden", stage="mlp", tensors=(block_mlp.HIDDEN,),
             checks=(ReluOf(x=block_mlp.FC1),), questions=(5, 6)),
    Snapshot(number=20, title="MLP output (hidden · W₂ + b₂)", variable="FFN_output", stage="mlp",
             tensors=(block_mlp.OUT,),
             checks=(LinearOf(x=block_mlp.HIDDEN, module=ModuleRef(f"{_B}.mlp.fc2")),), questions=(5, 6)),
    Snapshot(number=21, title="Residual around the MLP", variable="residual_output", stage="mlp",
             tensors=(block.RESIDUAL_2,),
             checks=(SumOf(operands=(block.LN_1, block_mlp.OUT)),), questions=(5, 6)),
    Snapshot(number=22, title="Second Add & Norm", variable="normalized", stage="mlp", tensors=(block.LN_2,),
             checks=(LayerNormOf(x=block.RESIDUAL_2, module=ModuleRef(f"{_B}.ln_2")),), questions=(5, 6)),
    Snapshot(number=23, title="Layer output x¹", variable="x¹", stage="mlp", tensors=(block.OUTPUT,),
             checks=(SameTensor(source=block.LN_2, claim="is the second Add & Norm"),
                     ResidualBlock(x=block.INPUT, block=ModuleRef(_B))), questions=(2, 5, 6)),
    Snapshot(number=24, title="[CLS] representation", variable="final_CLS", stage="head", tensors=(model.CLS_REP,),
             checks=(RowEquals(source=block.OUTPUT, row=0, claim="is row 0 ([CLS]) of x¹"),), questions=(2,)),
    Snapshot(number=25, title="Logits", variable="logits", stage="head", tensors=(model.LOGITS,),
             checks=(LinearOf(x=model.CLS_REP, module=ModuleRef("head")),), questions=(2, 6)),
    Snapshot(number=26, title="Class probabilities", variable="probabilities", stage="head", tensors=(model.PROBS,),
             checks=(Probabilities(logits=model.LOGITS),), questions=(6,), figures=("classes",)),
)

FIGURES = (
    Figure(id="patch_grid", caption="The 6×6 image pixel by pixel, cut into the nine 2×2 patches A–I the seed names.",
           drawing=PatchGrid(tensor=model.IMAGE)),
    Figure(id="positions", caption="The positional table added to each token (left) and x⁰, the sum (right); rows "
                                   "[CLS], A–I.",
           drawing=Positional(tensors=(model.TOKENS, model.TOKENS_POS), rows=InputRef("tokens"))),
    Figure(id="query_scores", caption="Patch E's raw scores Q₅·Kⱼ laid out on the patch grid: this run's value and the "
                                      "seed's in each "
                                      "square, the corner mark saying how they compare.",
           drawing=QueryOverGrid(tensor=block_attn.DOTS, entry="dots", what="raw scores Q·K")),
    Figure(id="query_weights", caption="Patch E's attention weights on the patch grid, this run's beside the seed's.",
           drawing=QueryOverGrid(tensor=block_attn.PROBS, entry="probs", what="attention weights")),
    Figure(id="attention", caption="Every token's attention weights (row = query, column = key), each written in its "
                                   "cell.",
           drawing=AttentionHeads(tensor=block_attn.PROBS, rows=InputRef("tokens"), cols=InputRef("tokens"),
                                  annotate=True)),
    Figure(id="verdicts", caption="Every row of numbers the seed printed, step by step: green where it agrees with "
                                  "this run, red "
                                  "where the seed's own inputs do not give its result, orange where it carries an "
                                  "earlier "
                                  "difference, blue where it computes the step differently.",
           drawing=VerdictMap()),
    Figure(id="classes", caption="Class probabilities of this run, the seed's printed ones beside them.",
           drawing=ClassBars(tensor=model.PROBS)),
)
OVERVIEW_FIGURES = ("patch_grid", "verdicts", "query_weights")
