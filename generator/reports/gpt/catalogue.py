"""The GPT report's catalogue: 32 snapshots from the prompt's bytes to the generated continuation.

Placeholders (see GPTOptions.places): {block} is the traced block, {block_prev} what feeds it,
{block_last} the last block; the traced block's key/value cache after generation is ``block.CACHE_K`` (scope
"generate").
"""

from transformer_trace.catalogue import ExtraPage, Figure, Question, Snapshot, Stage
from transformer_trace.checks import (
    ContextConcat, ContextHeads, GeluOfLinear, HandedOverOrTokens, LayerNormOf, LinearHeads, LinearOf, MlpInputNorm,
    Probabilities, ResidualOrPostNorm, ResidualSumEitherNorm, SameTensor, ScaledScores, SoftmaxRows, SumOf,
)
from transformer_trace.figures import AttentionHeads, Mask, Matrix
from transformer_trace.places import Place, Role
from transformer_trace.reports.gpt.checks import (
    CacheMatchesFullPass, CacheMatchesRecomputation, CausalMaskBool, EmbeddingRows, GptBlockRerun, GreedyBytes,
    MaskedFillOf, NextByte, PositionRows, PromptBytes, TiedHead, TrainingEffect,
)
from transformer_trace.reports.gpt.figures import ByteTable, Generation, HeadRoles, KvCache, NextByteTopk, TrainingCurve
from transformer_trace.sources import InputRef, ModuleRef, ParamRef, Ref
import transformer_trace.models.gpt as _model
from transformer_trace.models.gpt import Block, CausalSelfAttention, GPT, MLP

# Where the tensors are recorded: a place in the model (placeholders: the traced layer) and the module class there.
# ``place.POINT`` is the record name that class's declared point has at that place (generator/places.py).
model = Place("", GPT)
block_last = Place("{block_last}", Block, Role.LAST_LAYER)
block = Place("{block}", Block)
block_attn = Place("{block}.attn", CausalSelfAttention)
block_mlp = Place("{block}.mlp", MLP)
every_block_attn = Place("blocks.{i}.attn", CausalSelfAttention)  # {i}: every block, filled in by a check

DIMS_LEGEND = _model.LEGEND  # declared once, in the model file

STAGES = (
    Stage("bytes", "Bytes & embeddings", "From the prompt's UTF-8 bytes to one vector per byte, with its position "
                                         "added."),
    Stage("block", "Block (traced layer)", "One pre-norm block, operation by operation: causal self-attention, then "
                                           "the MLP."),
    Stage("output", "Output", "The final LayerNorm, the tied language-model head, and next-byte probabilities."),
    Stage("generation", "Generation", "Greedy continuation over a key/value cache, checked against recomputation from "
                                      "scratch."),
)

QUESTIONS = (
    Question(1, "Why does each position only look left, and what does the causal mask guarantee?"),
    Question(2, "How does this pre-LN block differ from the encoder–decoder's post-LN layers?"),
    Question(3, "What does it mean that every byte is a token, and what does it cost?"),
    Question(4, "What does weight tying share, and what does it save?"),
    Question(5, "What does the key/value cache keep, and how much memory does it take?"),
    Question(6, "What does training change: the predictions, the attention heads, the continuation?"),
)

SNAPSHOTS = (
    Snapshot(
        number=1,
        title='Prompt bytes (token IDs)',
        variable='ids',
        stage='bytes',
        tensors=(model.IDS,),
        checks=(PromptBytes(prompt=InputRef('prompt')),),
        figures=('bytes',),
        questions=(3,),
    ),
    Snapshot(
        number=2,
        title='Token embeddings',
        variable='tok',
        stage='bytes',
        tensors=(model.TOK_EMB,),
        checks=(EmbeddingRows(ids=model.IDS, parameter=ParamRef('tok_emb.weight')),),
        figures=('tok_embedding',),
        questions=(3, 4),
    ),
    Snapshot(
        number=3,
        title='Position embeddings',
        variable='pos',
        stage='bytes',
        tensors=(model.POS_EMB,),
        checks=(PositionRows(parameter=ParamRef('pos_emb.weight')),),
        questions=(3,),
    ),
    Snapshot(
        number=4,
        title='Embedding = token + position',
        variable='x',
        stage='bytes',
        tensors=(model.EMBED,),
        checks=(SumOf(operands=(model.TOK_EMB, model.POS_EMB)),),
        figures=('embedding',),
        questions=(1,),
    ),
    Snapshot(
        number=5,
        title='Block input',
        variable='x',
        stage='block',
        tensors=(block.INPUT,),
        checks=(HandedOverOrTokens(source=Ref('{block_prev}'), claim='is what the previous stage handed over',
                                   tokens=model.TOK_EMB, positions=model.POS_EMB, embedding='embed'),),
        questions=(2,),
    ),
    Snapshot(
        number=6,
        title='LayerNorm before attention (ln_1)',
        variable='attn_in',
        stage='block',
        tensors=(block.LN_1,),
        checks=(LayerNormOf(x=block.INPUT, module=ModuleRef('{block}.ln_1')),),
        questions=(2,),
    ),
    Snapshot(
        number=7,
        title='Fused q/k/v projection',
        variable='qkv',
        stage='block',
        tensors=(block_attn.QKV,),
        checks=(LinearOf(x=block.LN_1, module=ModuleRef('{block}.attn.qkv')),),
        questions=(5,),
    ),
    Snapshot(
        number=8,
        title='Queries per head (Q)',
        variable='q',
        stage='block',
        tensors=(block_attn.Q,),
        checks=(LinearHeads(x=block.LN_1, module=ModuleRef('{block}.attn.qkv'), part=0),),
        questions=(1,),
    ),
    Snapshot(
        number=9,
        title='Keys per head (K)',
        variable='k',
        stage='block',
        tensors=(block_attn.K,),
        checks=(LinearHeads(x=block.LN_1, module=ModuleRef('{block}.attn.qkv'), part=1),),
        questions=(5,),
    ),
    Snapshot(
        number=10,
        title='Values per head (V)',
        variable='v',
        stage='block',
        tensors=(block_attn.V,),
        checks=(LinearHeads(x=block.LN_1, module=ModuleRef('{block}.attn.qkv'), part=2),),
        questions=(5,),
    ),
    Snapshot(
        number=11,
        title='Attention scores before the mask',
        variable='scores',
        stage='block',
        tensors=(block_attn.SCORES,),
        checks=(ScaledScores(q=block_attn.Q, k=block_attn.K, probs=block_attn.PROBS, probs_label='G14'),),
        figures=('scores',),
        questions=(1,),
    ),
    Snapshot(
        number=12,
        title='Causal mask',
        variable='mask',
        stage='block',
        tensors=(model.MASK,),
        checks=(CausalMaskBool(masked=block_attn.MASKED_SCORES, scores=block_attn.SCORES, mask=model.MASK),),
        figures=('mask',),
        questions=(1,),
    ),
    Snapshot(
        number=13,
        title='Masked scores',
        variable='masked',
        stage='block',
        tensors=(block_attn.MASKED_SCORES,),
        checks=(MaskedFillOf(scores=block_attn.SCORES, mask=model.MASK, q=block_attn.Q, k=block_attn.K),),
        questions=(1,),
    ),
    Snapshot(
        number=14,
        title='Attention probabilities (causal softmax)',
        variable='probs',
        stage='block',
        tensors=(block_attn.PROBS,),
        checks=(SoftmaxRows(scores=block_attn.MASKED_SCORES, causal=True, q=block_attn.Q, k=block_attn.K,
                            decay=model.MASK),),
        figures=('attention',),
        questions=(1, 6),
    ),
    Snapshot(
        number=15,
        title='Attention context per head',
        variable='context',
        stage='block',
        tensors=(block_attn.CONTEXT,),
        checks=(ContextHeads(probs=block_attn.PROBS, v_heads=block_attn.V, q=block_attn.Q, k=block_attn.K),),
        questions=(1,),
    ),
    Snapshot(
        number=16,
        title='Heads concatenated',
        variable='concat',
        stage='block',
        tensors=(block_attn.CONCAT,),
        checks=(ContextConcat(probs=block_attn.PROBS, v=block_attn.V, q=block_attn.Q, k=block_attn.K),),
        questions=(1,),
    ),
    Snapshot(
        number=17,
        title='Attention output projection',
        variable='attn_out',
        stage='block',
        tensors=(block_attn.OUT,),
        checks=(LinearOf(x=block_attn.CONCAT, module=ModuleRef('{block}.attn.proj')),),
        questions=(2,),
    ),
    Snapshot(
        number=18,
        title='First residual sum',
        variable='residual_1',
        stage='block',
        tensors=(block.RESIDUAL_1,),
        checks=(SumOf(operands=(block.INPUT, block_attn.OUT)),),
        questions=(2,),
    ),
    Snapshot(
        number=19,
        title='LayerNorm before the MLP (ln_2)',
        variable='mlp_in',
        stage='block',
        tensors=(block.LN_2,),
        checks=(MlpInputNorm(x=block.RESIDUAL_1, module=ModuleRef('{block}.ln_2'), parallel=block.INPUT,
                              attn_in=block.LN_1),),
        questions=(2,),
    ),
    Snapshot(
        number=20,
        title='MLP first linear layer (fc1)',
        variable='pre_activation',
        stage='block',
        tensors=(block_mlp.FC1,),
        checks=(LinearOf(x=block.LN_2, module=ModuleRef('{block}.mlp.fc1')),),
        figures=('mlp',),
        questions=(2,),
    ),
    Snapshot(
        number=21,
        title='MLP hidden layer (GELU)',
        variable='hidden',
        stage='block',
        tensors=(block_mlp.HIDDEN,),
        checks=(GeluOfLinear(x=block.LN_2, module=ModuleRef('{block}.mlp.fc1')),),
        questions=(2,),
    ),
    Snapshot(
        number=22,
        title='MLP output (fc2)',
        variable='mlp_out',
        stage='block',
        tensors=(block_mlp.OUT,),
        checks=(LinearOf(x=block_mlp.HIDDEN, module=ModuleRef('{block}.mlp.fc2')),),
        questions=(2,),
    ),
    Snapshot(
        number=23,
        title='Second residual sum',
        variable='residual_2',
        stage='block',
        tensors=(block.RESIDUAL_2,),
        checks=(ResidualSumEitherNorm(operands=(block.RESIDUAL_1, block_mlp.OUT), post_norm=(block.LN_2, block_mlp.OUT),
                                     block_out=block.OUTPUT,
                                     three=(block.INPUT, block_attn.OUT, block_attn.CONCAT, block_mlp.OUT)),),
        questions=(2,),
    ),
    Snapshot(
        number=24,
        title='Block output',
        variable='x',
        stage='block',
        tensors=(block.OUTPUT,),
        checks=(GptBlockRerun(x=block.INPUT, block=ModuleRef('{block}'), mask=model.MASK),
                ResidualOrPostNorm(source=block.RESIDUAL_2, claim='is the second residual sum: a pre-norm block ends '
                                                                  'without a norm',
                                   operands=(block.LN_2, block_mlp.OUT), module=ModuleRef('{block}.ln_post'),
                                   post_claim='is LayerNorm(G19 + G22): a post-norm block ends with a norm')),
        questions=(2,),
    ),
    Snapshot(
        number=25,
        title='Final LayerNorm (ln_f)',
        variable='ln_f',
        stage='output',
        tensors=(model.LN_F,),
        checks=(LayerNormOf(x=block_last.OUTPUT, module=ModuleRef('ln_f')),),
        questions=(2,),
    ),
    Snapshot(
        number=26,
        title='Logits (tied language-model head)',
        variable='logits',
        stage='output',
        tensors=(model.LOGITS,),
        checks=(TiedHead(x=model.LN_F, head=ModuleRef('lm_head'), embedding=ModuleRef('tok_emb')),),
        questions=(4,),
    ),
    Snapshot(
        number=27,
        title='Next-byte probabilities at every position',
        variable='probs',
        stage='output',
        tensors=(model.PROBS,),
        checks=(Probabilities(logits=model.LOGITS),),
        figures=('next_byte',),
        questions=(6,),
    ),
    Snapshot(
        number=28,
        title='Next-byte distribution after the prompt',
        variable='probs[0, -1]',
        stage='output',
        tensors=(model.PROBS,),
        checks=(NextByte(logits=model.LOGITS, new_ids=model.NEW_IDS),),
        shape=('V',),
        index='[0, -1]',
        figures=('next_byte',),
        questions=(3, 6),
    ),
    Snapshot(
        number=29,
        title='Key cache of the traced block',
        variable='cache_k',
        stage='generation',
        tensors=(block.CACHE_K,),
        checks=(CacheMatchesFullPass(prompt_part=block_attn.K, ids=model.IDS, new_ids=model.NEW_IDS,
                                     block=ModuleRef('{block}'), part='k'),),
        figures=('kv_cache',),
        questions=(5,),
    ),
    Snapshot(
        number=30,
        title='Value cache of the traced block',
        variable='cache_v',
        stage='generation',
        tensors=(block.CACHE_V,),
        checks=(CacheMatchesFullPass(prompt_part=block_attn.V, ids=model.IDS, new_ids=model.NEW_IDS,
                                     block=ModuleRef('{block}'), part='v'),),
        questions=(5,),
    ),
    Snapshot(
        number=31,
        title='Cached vs recomputed logits',
        variable='cached_logits, recomputed_logits',
        stage='generation',
        tensors=(model.CACHED_LOGITS, model.RECOMPUTED_LOGITS),
        checks=(CacheMatchesRecomputation(recomputed=model.RECOMPUTED_LOGITS, ids=model.IDS, new_ids=model.NEW_IDS),),
        figures=('generation',),
        questions=(5,),
    ),
    Snapshot(
        number=32,
        title='Generated bytes (greedy)',
        variable='new_ids',
        stage='generation',
        tensors=(model.NEW_IDS,),
        checks=(GreedyBytes(logits=model.CACHED_LOGITS),),
        figures=('generation',),
        questions=(3, 6),
    ),
)

FIGURES = (
    Figure(id='bytes', caption='The prompt as the model reads it: one cell per UTF-8 byte (16 per row), the character '
                               'it belongs to above, its value below; multi-byte characters are shaded.',
           drawing=ByteTable()),
    Figure(id='tok_embedding', caption='Token embeddings: one row per prompt byte, one column per feature (first 64 of '
                                       'C shown).',
           drawing=Matrix(tensor=model.TOK_EMB, max_cols=64, xlabel='feature', cmap='RdBu_r')),
    Figure(id='embedding', caption='Token + position embedding, the input of block 1 (first 64 of C shown).',
           drawing=Matrix(tensor=model.EMBED, max_cols=64, xlabel='feature', cmap='RdBu_r')),
    Figure(id='scores', caption='Scaled scores Q·Kᵀ/√hs of the traced block, one panel per head, before the mask: '
                                'every pair is computed, even the ones the mask will hide.',
           drawing=AttentionHeads(tensor=block_attn.SCORES, cmap='RdBu_r')),
    Figure(id='mask', caption='The causal mask: a query (row) may read a key (column) where the cell is white; grey '
                              'cells, the future, are blocked.',
           drawing=Mask(tensor=model.MASK)),
    Figure(id='attention', caption='Causal attention weights of the traced block, one panel per head: row = the byte '
                                   'attending, column = the byte attended to; everything above the diagonal is exactly '
                                   '0.',
           drawing=AttentionHeads(tensor=block_attn.PROBS, annotate=True)),
    Figure(id='mlp', caption='MLP pre-activations of the traced block (first 256 hidden units); GELU keeps positive '
                             'entries (red) and squashes negative ones (blue) towards 0.',
           drawing=Matrix(tensor=block_mlp.FC1, max_cols=256, xlabel='hidden unit', cmap='RdBu_r')),
    Figure(id='next_byte', caption='The ten most probable next bytes after the last prompt positions; the dashed line '
                                   'is the uniform 1/256.',
           drawing=NextByteTopk(tensor=model.PROBS, positions=3, k=10)),
    Figure(id='kv_cache', caption='Keys cached by the traced block after generation, head 1: one row per position, the '
                                  'prompt above the line, fed-back generated bytes below.',
           drawing=KvCache(tensor=block.CACHE_K)),
    Figure(id='training_curve', caption='Training: the loss of every step in bits per byte (thin), its running mean '
                                        '(thick) and the held-out bits per byte (dots), against the bigram baseline of '
                                        'the same corpus and 8 bits for a uniform guess; the star is the held-out bits '
                                        'per byte of these weights.',
           drawing=TrainingCurve()),
    Figure(id='head_roles', caption='Every head on this prompt: the share of attention each query puts on the previous '
                                    'byte and on itself (bars), and its mean row entropy against a uniform spread '
                                    '(dots, right axis); the most previous-token-like head is outlined.',
           drawing=HeadRoles()),
    Figure(id='generation', caption='The greedy continuation: each generated byte with its probability (left), and how '
                                    'far the cached logits are from a full recomputation at each step (right).',
           drawing=Generation(tensor=model.CACHED_LOGITS, recomputed_tensor=model.RECOMPUTED_LOGITS)),
)

EXTRA_PAGES = (
    ExtraPage(
        slug='training',
        title='What training did',
        template='training.md.j2',
        checks=(TrainingEffect(block_probs=every_block_attn.PROBS.template),),  # {i}: filled in by the check
        figures=('training_curve', 'head_roles'),
    ),
)

OVERVIEW_FIGURES = ('bytes', 'attention', 'next_byte', 'generation', 'training_curve')
ALSO_RECORD = ()
