"""The ViT report's catalogue: the seed report's snapshots S01-S26, its stages, figures and questions.

Placeholders: {block} is the traced block, {block_prev} what feeds it, {block2} the second block and
{block_last} the last one (see VitOptions.places).
"""

from transformer_trace.catalogue import ExtraPage, Figure, Question, Snapshot, Stage
from transformer_trace.checks import (
    ContextHeads, EqualsParameter, FinalNormOrNone, GeluOfLinear, LinearHeads, LinearOf, PlusParameter, Probabilities,
    ProjectionOfHeads,
    ResidualBlock, ResidualThenNorm, RowEquals, SameTensor, ScaledScores, SoftmaxRows, SumOf, TokensConcat,
)
from transformer_trace.figures import AttentionHeads, Matrix
from transformer_trace.places import Place, Role
from transformer_trace.reports.vit.checks import (
    Flattened, HandedOverOrEmbedding, NormalisedImage, PatchesReassemble, RolloutRows,
)
from transformer_trace.reports.vit.figures import ClsAttention, InputImage, PatchMosaic, PosSimilarity, Rollout, Top5
from transformer_trace.sources import ModuleRef, ParamRef, Ref
import transformer_trace.models.vit as _model
from transformer_trace.models.vit import EncoderBlock, MLP, PatchEmbedding, SelfAttention, VisionTransformer

# Where the tensors are recorded: a place in the model (placeholders: the traced layer) and the module class there.
# ``place.POINT`` is the record name that class's declared point has at that place (generator/places.py).
model = Place("", VisionTransformer)
patch_embed = Place("patch_embed", PatchEmbedding)
block2 = Place("{block2}", EncoderBlock)
block_last = Place("{block_last}", EncoderBlock, Role.LAST_LAYER)
block_last_attn = Place("{block_last}.attn", SelfAttention, Role.LAST_LAYER)
block = Place("{block}", EncoderBlock)
block_attn = Place("{block}.attn", SelfAttention)
block_mlp = Place("{block}.mlp", MLP)
every_block_attn = Place("blocks.{i}.attn", SelfAttention)  # {i}: every block, filled in by a check

DIMS_LEGEND = _model.LEGEND  # declared once, in the model file

STAGES = (
    Stage("input", "Input & patches", "From pixels to a sequence of patch tokens with [CLS] and positions."),
    Stage("block", "Encoder block", "One encoder block, traced operation by operation (pre-norm)."),
    Stage("output", "Depth & output", "Deeper blocks, the final LayerNorm, and the classification head."),
)

QUESTIONS = (
    Question(1, "Why must the image be split into patches before embedding?"),
    Question(2, "Why is a class token added, and how does it affect the shape?"),
    Question(3, "Why are positional encodings needed in ViT?"),
    Question(4, "Why do Q, K, V have the same dimensions, and how do attention weights scale with patch count?"),
    Question(5, "How do residual connections preserve shape consistency across encoder blocks?"),
    Question(6, "Why is only the class token used for the final classification?"),
)

SNAPSHOTS = (
    Snapshot(
        number=1,
        title='Raw input tensor (after preprocessing)',
        variable='img_tensor',
        stage='input',
        tensors=(model.IMAGE,),
        checks=(NormalisedImage(),),
        figures=('input_image',),
        questions=(1,),
    ),
    Snapshot(
        number=2,
        title='Patches (4D view)',
        variable='patches_4d',
        stage='input',
        tensors=(patch_embed.PATCHES,),
        checks=(PatchesReassemble(image=model.IMAGE),),
        figures=('patch_mosaic',),
        questions=(1,),
    ),
    Snapshot(
        number=3,
        title='Flattened patches',
        variable='patches_flat',
        stage='input',
        tensors=(patch_embed.FLAT,),
        checks=(Flattened(source=patch_embed.PATCHES),),
        questions=(1,),
    ),
    Snapshot(
        number=4,
        title='Patch embeddings',
        variable='x_embed',
        stage='input',
        tensors=(patch_embed.EMBED,),
        checks=(LinearOf(x=patch_embed.FLAT, module=ModuleRef('patch_embed.proj')),),
        figures=('patch_embedding',),
        questions=(1,),
    ),
    Snapshot(
        number=5,
        title='Class token (before concatenation)',
        variable='cls_tok',
        stage='input',
        tensors=(model.CLS_TOKEN,),
        checks=(EqualsParameter(parameter=ParamRef('class_token')),),
        questions=(2,),
    ),
    Snapshot(
        number=6,
        title='Tokens after adding [CLS]',
        variable='x_tokens',
        stage='input',
        tensors=(model.TOKENS,),
        checks=(TokensConcat(cls=model.CLS_TOKEN, patches=patch_embed.EMBED, positioned=model.TOKENS_POS),),
        questions=(2,),
    ),
    Snapshot(
        number=7,
        title='After adding positional encoding',
        variable='x_pos',
        stage='input',
        tensors=(model.TOKENS_POS,),
        checks=(PlusParameter(x=model.TOKENS, parameter=ParamRef('pos_embedding'), patches=patch_embed.EMBED),),
        figures=('pos_similarity',),
        questions=(3,),
    ),
    Snapshot(
        number=8,
        title='Block input',
        variable='x_in',
        stage='block',
        tensors=(block.INPUT,),
        # a LayerNorm of the embeddings before the first block (CLIP's ln_pre) is recognised as such
        checks=(HandedOverOrEmbedding(source=Ref('{block_prev}'), claim='is what the previous stage handed over',
                                      or_layer_norm=True, derive_plain=True, tokens=model.TOKENS,
                                      embed=patch_embed.EMBED),),
        questions=(5,),
    ),
    Snapshot(
        number=9,
        title='Q (per head)',
        variable='q',
        stage='block',
        tensors=(block_attn.Q,),
        checks=(LinearHeads(x=block.LN_1, module=ModuleRef('{block}.attn.qkv'), part=0),),
        questions=(4,),
    ),
    Snapshot(
        number=10,
        title='K (per head)',
        variable='k',
        stage='block',
        tensors=(block_attn.K,),
        checks=(LinearHeads(x=block.LN_1, module=ModuleRef('{block}.attn.qkv'), part=1),),
        questions=(4,),
    ),
    Snapshot(
        number=11,
        title='V (per head)',
        variable='v',
        stage='block',
        tensors=(block_attn.V,),
        checks=(LinearHeads(x=block.LN_1, module=ModuleRef('{block}.attn.qkv'), part=2),),
        questions=(4,),
    ),
    Snapshot(
        number=12,
        title='Attention scores (pre-softmax)',
        variable='attn_scores',
        stage='block',
        tensors=(block_attn.SCORES,),
        checks=(ScaledScores(q=block_attn.Q, k=block_attn.K, probs=block_attn.PROBS, probs_label='S13'),),
        questions=(4,),
    ),
    Snapshot(
        number=13,
        title='Attention probabilities',
        variable='attn_probs',
        stage='block',
        tensors=(block_attn.PROBS,),
        checks=(SoftmaxRows(scores=block_attn.SCORES, q=block_attn.Q, k=block_attn.K),),
        figures=('attention_heads', 'cls_attention'),
        questions=(4,),
    ),
    Snapshot(
        number=14,
        title='Context per head',
        variable='attn_ctx',
        stage='block',
        tensors=(block_attn.CONTEXT,),
        checks=(ContextHeads(probs=block_attn.PROBS, v_heads=block_attn.V, q=block_attn.Q, k=block_attn.K),),
        questions=(4,),
    ),
    Snapshot(
        number=15,
        title='MHA output (concat + projection)',
        variable='attn_out',
        stage='block',
        tensors=(block_attn.OUT,),
        checks=(ProjectionOfHeads(x=block_attn.CONCAT, module=ModuleRef('{block}.attn.proj'),
                                  heads=block_attn.CONTEXT),),
        questions=(5,),
    ),
    Snapshot(
        number=16,
        title='Residual + norm (post-attention)',
        variable='ff_in',
        stage='block',
        tensors=(block.LN_2,),
        checks=(ResidualThenNorm(operands=(block.INPUT, block_attn.OUT), module=ModuleRef('{block}.ln_2')),),
        differs="The seed normalised `x + attn_out` with a LayerNorm and then also used the un-normalised sum nowhere; "
                "in the standard pre-norm ViT this LayerNorm (`ln_2`) only feeds the MLP, while the residual stream "
                "keeps the raw sum `x + attn_out`. The page shows `ln_2(x + attn_out)`, the MLP's input.",
        questions=(5,),
    ),
    Snapshot(
        number=17,
        title='FFN hidden (after fc1 + GELU)',
        variable='ff_hidden',
        stage='block',
        tensors=(block_mlp.HIDDEN,),
        checks=(GeluOfLinear(x=block.LN_2, module=ModuleRef('{block}.mlp.fc1')),),
        questions=(5,),
    ),
    Snapshot(
        number=18,
        title='FFN output (after fc2)',
        variable='ff_out',
        stage='block',
        tensors=(block_mlp.OUT,),
        checks=(LinearOf(x=block_mlp.HIDDEN, module=ModuleRef('{block}.mlp.fc2')),),
        questions=(5,),
    ),
    Snapshot(
        number=19,
        title='Residual (+ norm) post-MLP',
        variable='x_after_mlp',
        stage='block',
        tensors=(block.RESIDUAL_2,),
        checks=(SumOf(operands=(block.INPUT, block_attn.OUT, block_mlp.OUT)),),
        differs="The seed added the MLP output to the *normalised* `ff_in` and normalised again (`norm3`). In the "
                "standard pre-norm ViT the MLP output is added to the un-normalised residual stream `x + attn_out`, "
                "and no LayerNorm follows inside the block: the next block's `ln_1` (or the final `ln`, S23) "
                "normalises it.",
        questions=(5,),
    ),
    Snapshot(
        number=20,
        title='Encoder block output',
        variable='block_out',
        stage='block',
        tensors=(block.OUTPUT,),
        checks=(SameTensor(source=block.RESIDUAL_2, claim='is the post-MLP residual sum (no norm inside a pre-norm '
                                                          'block)'),),
        differs='In the seed this was the output of an extra LayerNorm; in the standard ViT the block ends with the '
                'residual sum of S19.',
        questions=(5,),
    ),
    Snapshot(
        number=21,
        title='Encoder block 2 output',
        variable='x_block2_out',
        stage='output',
        tensors=(block2.OUTPUT,),
        checks=(ResidualBlock(x=block2.INPUT, block=ModuleRef('{block2}')),
                SameTensor(source=block2.RESIDUAL_2, claim="is the second block's last residual sum")),
        questions=(5,),
    ),
    Snapshot(
        number=22,
        title='Encoder block N (last) output',
        variable='x_last',
        stage='output',
        tensors=(block_last.OUTPUT,),
        checks=(ResidualBlock(x=block_last.INPUT, block=ModuleRef('{block_last}')),
                SameTensor(source=block_last.RESIDUAL_2, claim="is the last block's last residual sum")),
        questions=(5,),
    ),
    Snapshot(
        number=23,
        title='Final sequence (incl. [CLS])',
        variable='final_seq',
        stage='output',
        tensors=(model.FINAL_SEQ,),
        checks=(FinalNormOrNone(x=block_last.OUTPUT, module=ModuleRef('ln')),),
        differs="The seed's model had no final LayerNorm after the last block; ViT-B/16 (paper and torchvision) "
                "applies one (`ln`) before the head, so S23 is `ln(S22)`.",
        questions=(6,),
    ),
    Snapshot(
        number=24,
        title='Class token (final representation)',
        variable='cls_rep',
        stage='output',
        tensors=(model.CLS_REP,),
        checks=(RowEquals(source=model.FINAL_SEQ, row=0, claim='is row 0 ([CLS]) of the final sequence'),),
        questions=(2, 6),
    ),
    Snapshot(
        number=25,
        title='Logits',
        variable='logits',
        stage='output',
        tensors=(model.LOGITS,),
        checks=(LinearOf(x=model.CLS_REP, module=ModuleRef('head')),),
        figures=('top5',),
        questions=(6,),
    ),
    Snapshot(
        number=26,
        title='Softmax probabilities',
        variable='probs',
        stage='output',
        tensors=(model.PROBS,),
        checks=(Probabilities(logits=model.LOGITS),),
        figures=('top5',),
        questions=(6,),
    ),
)

FIGURES = (
    Figure(id='input_image', caption='The input image as loaded (left; outlined: the centre crop, when the weights '
                                     'need one) and as the model sees it after resizing and normalisation (right), '
                                     'with the patch grid.',
           drawing=InputImage(tensor=model.IMAGE)),
    Figure(id='patch_mosaic', caption='Every patch of the preprocessed image, in the order the model reads them (row '
                                      'by row).',
           drawing=PatchMosaic(tensor=patch_embed.PATCHES)),
    Figure(id='patch_embedding', caption='Patch-embedding matrix: one row per patch, one column per feature (first 96 '
                                         'of C shown).',
           drawing=Matrix(tensor=patch_embed.EMBED, max_cols=96, xlabel='feature', ylabel='patch', cmap='RdBu_r')),
    Figure(id='pos_similarity', caption='Cosine similarity between position embeddings: the full matrix (left) and, '
                                        'for a few patches, the similarity to every other patch as a grid.',
           drawing=PosSimilarity(parameter=ParamRef('pos_embedding'))),
    Figure(id='attention_heads', caption='Attention probabilities of every head of the traced block (all tokens; row = '
                                         'query, column = key; with many tokens the colour scale stops at the 99.5th '
                                         'percentile).',
           drawing=AttentionHeads(tensor=block_attn.PROBS)),
    Figure(id='cls_attention', caption='Where the [CLS] token looks: its attention over the patches, per head, laid '
                                       'over the image.',
           drawing=ClsAttention(tensor=block_attn.PROBS, image_tensor=model.IMAGE)),
    Figure(id='top5', caption='The five most probable classes.',
           drawing=Top5(tensor=model.PROBS)),
    Figure(id='rollout', caption="Where [CLS] draws from: the last block's raw attention (middle) and the rollout "
                                 "through every block (right), over the input.",
           drawing=Rollout(tensor=block_last_attn.PROBS, image_tensor=model.IMAGE)),
)

EXTRA_PAGES = (
    ExtraPage(
        slug='rollout',
        title='Attention rollout',
        template='rollout.md.j2',
        checks=(RolloutRows(block_probs=every_block_attn.PROBS.template),),  # {i}: filled in by the check
        figures=('rollout',),
    ),
)

OVERVIEW_FIGURES = ('input_image', 'cls_attention', 'top5')
ALSO_RECORD = (block.RESIDUAL_1,)  # read by the explanations only
