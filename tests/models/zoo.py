"""The real models of tests/models, built from configs with random weights.

Nothing here downloads anything: torchvision models get ``weights=None``,
transformers models are built from a ``*Config`` with ``Model(config)``,
timm models with ``pretrained=False``.  Sizes are tiny (2 layers, hidden 64,
64x64 images, batch 2, sequence length 8) so the whole suite fits in CI.

Every builder returns a :class:`Case`: the module (seeded, eval mode) and a
function making its example inputs (positional args, keyword args).  Dropout
probabilities are set to 0 in configs where the model allows it; elsewhere
the test resets the RNG before each call.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import torch
import torch.nn.functional as F

BATCH = 2
IMAGE = 64
SEQ = 8
HIDDEN = 64
LAYERS = 2
HEADS = 2
VOCAB = 128


@dataclasses.dataclass
class Case:
    model: torch.nn.Module
    make_inputs: Callable[[], tuple[tuple, dict[str, Any]]]


def _images():
    g = torch.Generator().manual_seed(1)
    return (torch.randn(BATCH, 3, IMAGE, IMAGE, generator=g),), {}


def _token_ids(vocab=VOCAB, seq=SEQ, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (BATCH, seq), generator=g)


def _seeded(build):
    def wrapper():
        torch.manual_seed(0)
        case = build()
        case.model.eval()
        return case
    wrapper.__name__ = build.__name__
    return wrapper


# --------------------------------------------------------------------------
# torchvision
# --------------------------------------------------------------------------


@_seeded
def tv_resnet18():
    import torchvision
    return Case(torchvision.models.resnet18(weights=None, num_classes=10), _images)


@_seeded
def tv_mobilenet_v3_small():
    import torchvision
    # its classifier has Dropout(p=0.2): no config knob, the test reseeds.
    return Case(torchvision.models.mobilenet_v3_small(weights=None, num_classes=10), _images)


@_seeded
def tv_vit():
    from torchvision.models.vision_transformer import VisionTransformer
    model = VisionTransformer(image_size=IMAGE, patch_size=16, num_layers=LAYERS, num_heads=HEADS,
                              hidden_dim=HIDDEN, mlp_dim=2 * HIDDEN, num_classes=10,
                              dropout=0.0, attention_dropout=0.0)
    return Case(model, _images)


@_seeded
def tv_swin_t():
    import torchvision
    # 64x64 works with random weights: 16x16 patches, padded to the 7x7 window
    # at every stage.  Stochastic depth (p up to 0.2) is random in train mode:
    # the test reseeds the RNG before the eager and the compiled call.
    return Case(torchvision.models.swin_t(weights=None, num_classes=10), _images)


# --- a ResNet whose helpers are registered with torch.fx.wrap -----------------
#
# torch.fx.wrap makes symbolic_trace keep a call to the function as one leaf
# node; for a bytecode tracer it is an ordinary function (torch.compile inlines
# it).  Registered by name at module level, as the API requires.


def fx_wrapped_shortcut(x, identity):
    """A residual join with Python-level shape logic (why users fx.wrap it)."""
    if x.shape[1] != identity.shape[1]:
        identity = torch.cat([identity, identity.new_zeros(identity.shape[0], x.shape[1] - identity.shape[1],
                                                           *identity.shape[2:])], dim=1)
    if x.shape[-1] != identity.shape[-1]:
        identity = F.avg_pool2d(identity, identity.shape[-1] // x.shape[-1])
    return F.relu(x + identity)


torch.fx.wrap("fx_wrapped_shortcut")


@torch.fx.wrap
def fx_wrapped_pool(x, size: int = 1):
    return torch.flatten(F.adaptive_avg_pool2d(x, size), 1)


class _WrappedBlock(torch.nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(cout)
        self.conv2 = torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(cout)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return fx_wrapped_shortcut(out, x)


class FxWrapResNet(torch.nn.Module):
    """A small ResNet (4 stages, 2 blocks each) calling fx-wrapped helpers."""

    def __init__(self, widths=(16, 32, 64, 128), num_classes=10):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, widths[0], 3, 1, 1, bias=False),
                                        torch.nn.BatchNorm2d(widths[0]), torch.nn.ReLU(inplace=True))
        blocks, cin = [], widths[0]
        for i, w in enumerate(widths):
            blocks += [_WrappedBlock(cin, w, 1 if i == 0 else 2), _WrappedBlock(w, w, 1)]
            cin = w
        self.blocks = torch.nn.Sequential(*blocks)
        self.fc = torch.nn.Linear(cin, num_classes)

    def forward(self, x):
        return self.fc(fx_wrapped_pool(self.blocks(self.stem(x))))


@_seeded
def fx_wrap_resnet():
    return Case(FxWrapResNet(), _images)


# --------------------------------------------------------------------------
# transformers
# --------------------------------------------------------------------------


@_seeded
def hf_bert():
    from transformers import BertConfig, BertModel
    config = BertConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                        num_attention_heads=HEADS, intermediate_size=2 * HIDDEN,
                        max_position_embeddings=64, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    model = BertModel(config)

    def inputs():
        ids = _token_ids()
        mask = torch.ones_like(ids)
        mask[1, -2:] = 0  # one padded sequence: the mask matters
        return (ids,), {"attention_mask": mask}
    return Case(model, inputs)


@_seeded
def hf_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    config = GPT2Config(vocab_size=VOCAB, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS,
                        n_positions=64, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = GPT2LMHeadModel(config)
    return Case(model, lambda: ((_token_ids(),), {}))


@_seeded
def hf_gpt2_loss():
    """GPT-2 given labels (DistilGPT-2's dashboard inputs): the loss path
    reads ``self.loss_function``, which calls ``logger.warning_once`` (an
    lru_cache'd method of logging.Logger) about ``loss_type=None``; the call
    is replayed after the graph and the warning logged once, as in eager."""
    from transformers import GPT2Config, GPT2LMHeadModel
    config = GPT2Config(vocab_size=VOCAB, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS,
                        n_positions=64, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = GPT2LMHeadModel(config)

    def inputs():
        ids = _token_ids()
        return (ids,), {"labels": ids, "use_cache": False}
    return Case(model, inputs)


def _llama_config():
    from transformers import LlamaConfig
    return LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                       num_attention_heads=HEADS * 2, num_key_value_heads=HEADS,
                       intermediate_size=2 * HIDDEN, max_position_embeddings=64,
                       attention_dropout=0.0)


@_seeded
def hf_llama():
    from transformers import LlamaForCausalLM
    model = LlamaForCausalLM(_llama_config())
    return Case(model, lambda: ((_token_ids(),), {"use_cache": False}))


@_seeded
def hf_t5():
    from transformers import T5Config, T5Model
    config = T5Config(vocab_size=VOCAB, d_model=HIDDEN, d_kv=HIDDEN // HEADS, d_ff=2 * HIDDEN,
                      num_layers=LAYERS, num_decoder_layers=LAYERS, num_heads=HEADS,
                      dropout_rate=0.0, relative_attention_num_buckets=8,
                      relative_attention_max_distance=16, decoder_start_token_id=0)
    model = T5Model(config)

    def inputs():
        return (_token_ids(),), {"decoder_input_ids": _token_ids(seq=4, seed=2), "use_cache": False}
    return Case(model, inputs)


@_seeded
def hf_t5_cache():
    """T5 called with its default ``use_cache=True`` and no cache: it builds
    ``DynamicCache(config=...)``, whose ``get_text_config`` deep-copies the
    config (a PretrainedConfig, with its own __getattribute__)."""
    from transformers import T5Config, T5Model
    config = T5Config(vocab_size=VOCAB, d_model=HIDDEN, d_kv=HIDDEN // HEADS, d_ff=2 * HIDDEN,
                      num_layers=LAYERS, num_decoder_layers=LAYERS, num_heads=HEADS,
                      dropout_rate=0.0, relative_attention_num_buckets=8,
                      relative_attention_max_distance=16, decoder_start_token_id=0)
    model = T5Model(config)

    def inputs():
        return (_token_ids(),), {"decoder_input_ids": _token_ids(seq=4, seed=2)}
    return Case(model, inputs)


def _padded_ids(seq=SEQ):
    ids = _token_ids(seq=seq)
    mask = torch.ones_like(ids)
    mask[1, -2:] = 0  # one padded sequence: the mask matters
    return ids, mask


@_seeded
def hf_distilbert():
    """DistilBERT with its sequence-classification head, whose forward
    creates a module: ``nn.ReLU()(pooled_output)``."""
    from transformers import DistilBertConfig, DistilBertForSequenceClassification
    config = DistilBertConfig(vocab_size=VOCAB, dim=HIDDEN, n_layers=LAYERS, n_heads=HEADS,
                              hidden_dim=2 * HIDDEN, max_position_embeddings=64, dropout=0.0,
                              attention_dropout=0.0, seq_classif_dropout=0.0, num_labels=3)
    model = DistilBertForSequenceClassification(config)

    def inputs():
        ids, mask = _padded_ids()
        return (ids,), {"attention_mask": mask}
    return Case(model, inputs)


@_seeded
def hf_bart():
    from transformers import BartConfig, BartModel
    config = BartConfig(vocab_size=VOCAB, d_model=HIDDEN, encoder_layers=LAYERS, decoder_layers=LAYERS,
                        encoder_attention_heads=HEADS, decoder_attention_heads=HEADS,
                        encoder_ffn_dim=2 * HIDDEN, decoder_ffn_dim=2 * HIDDEN, max_position_embeddings=64,
                        dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
                        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)
    model = BartModel(config)

    def inputs():
        ids, mask = _padded_ids()
        return (ids,), {"attention_mask": mask, "decoder_input_ids": _token_ids(seq=4, seed=2),
                        "use_cache": False}
    return Case(model, inputs)


@_seeded
def hf_vit():
    from transformers import ViTConfig, ViTForImageClassification
    config = ViTConfig(image_size=IMAGE, patch_size=16, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                       num_attention_heads=HEADS, intermediate_size=2 * HIDDEN, num_labels=10,
                       hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return Case(ViTForImageClassification(config), _images)


@_seeded
def hf_whisper():
    from transformers import WhisperConfig, WhisperForConditionalGeneration
    config = WhisperConfig(vocab_size=VOCAB, num_mel_bins=16, d_model=HIDDEN, encoder_layers=LAYERS,
                           decoder_layers=LAYERS, encoder_attention_heads=HEADS, decoder_attention_heads=HEADS,
                           encoder_ffn_dim=2 * HIDDEN, decoder_ffn_dim=2 * HIDDEN, max_source_positions=16,
                           max_target_positions=64, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                           decoder_start_token_id=3, begin_suppress_tokens=None, suppress_tokens=None,
                           dropout=0.0, attention_dropout=0.0, activation_dropout=0.0)
    model = WhisperForConditionalGeneration(config)

    def inputs():
        g = torch.Generator().manual_seed(1)
        # (batch, mel bins, 2 * max_source_positions): the encoder's convs halve it
        features = torch.randn(BATCH, 16, 32, generator=g)
        return (features,), {"decoder_input_ids": _token_ids(seq=4, seed=2), "use_cache": False}
    return Case(model, inputs)


def _decoder_only_config(cls_name):
    import transformers
    cls = getattr(transformers, cls_name)
    return cls(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
               num_attention_heads=HEADS * 2, num_key_value_heads=HEADS,
               intermediate_size=2 * HIDDEN, max_position_embeddings=64, attention_dropout=0.0)


@_seeded
def hf_qwen2():
    from transformers import Qwen2ForCausalLM
    model = Qwen2ForCausalLM(_decoder_only_config("Qwen2Config"))
    return Case(model, lambda: ((_token_ids(),), {"use_cache": False}))


@_seeded
def hf_mistral():
    from transformers import MistralForCausalLM
    model = MistralForCausalLM(_decoder_only_config("MistralConfig"))
    return Case(model, lambda: ((_token_ids(),), {"use_cache": False}))


@_seeded
def hf_trocr():
    """TrOCR's decoder (causal LM): its attention checks
    ``attn_weights.size() != (bsz * self.num_heads, tgt_len, src_len)`` and
    formats that tuple into its error message (a static size compared with
    a tuple holding a module's int attribute: tests/dynamic)."""
    from transformers import TrOCRConfig, TrOCRForCausalLM
    config = TrOCRConfig(vocab_size=VOCAB, d_model=HIDDEN, decoder_layers=LAYERS, decoder_attention_heads=HEADS,
                         decoder_ffn_dim=2 * HIDDEN, max_position_embeddings=64, dropout=0.0,
                         attention_dropout=0.0, activation_dropout=0.0)
    return Case(TrOCRForCausalLM(config), lambda: ((_token_ids(),), {"use_cache": False}))


@_seeded
def hf_xglm():
    """XGLM (causal LM): the same shape checks and messages as TrOCR."""
    from transformers import XGLMConfig, XGLMForCausalLM
    config = XGLMConfig(vocab_size=VOCAB, d_model=HIDDEN, num_layers=LAYERS, attention_heads=HEADS,
                        ffn_dim=2 * HIDDEN, max_position_embeddings=64, dropout=0.0, attention_dropout=0.0,
                        activation_dropout=0.0)
    return Case(XGLMForCausalLM(config), lambda: ((_token_ids(),), {"use_cache": False}))


@_seeded
def hf_deberta_v2():
    """DeBERTa-v2 (masked LM): its attention calls functions compiled with
    ``torch.jit.script`` (``make_log_bucket_position``,
    ``c2p_dynamic_expand``...), traced through their Python source."""
    from transformers import DebertaV2Config, DebertaV2ForMaskedLM
    config = DebertaV2Config(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                             num_attention_heads=HEADS, intermediate_size=2 * HIDDEN,
                             max_position_embeddings=64, hidden_dropout_prob=0.0,
                             attention_probs_dropout_prob=0.0, relative_attention=True,
                             position_buckets=8, pos_att_type=["p2c", "c2p"])
    model = DebertaV2ForMaskedLM(config)

    def inputs():
        ids, mask = _padded_ids()
        return (ids,), {"attention_mask": mask}
    return Case(model, inputs)


@_seeded
def hf_t5_generation():
    """T5 with its LM head, for the greedy decoding test (test_models.py)."""
    from transformers import T5Config, T5ForConditionalGeneration
    config = T5Config(vocab_size=VOCAB, d_model=HIDDEN, d_kv=HIDDEN // HEADS, d_ff=2 * HIDDEN,
                      num_layers=LAYERS, num_decoder_layers=LAYERS, num_heads=HEADS,
                      dropout_rate=0.0, relative_attention_num_buckets=8,
                      relative_attention_max_distance=16, decoder_start_token_id=0, pad_token_id=0,
                      eos_token_id=1)
    model = T5ForConditionalGeneration(config)
    # an LM head of its own (transformers 5 always ties it to the embedding,
    # and a tiny random T5 with a tied head greedily repeats its start token:
    # nothing to compare)
    model.lm_head.weight = torch.nn.Parameter(torch.randn(VOCAB, HIDDEN) * HIDDEN ** -0.5)

    def inputs():
        return (_token_ids(),), {"decoder_input_ids": _token_ids(seq=4, seed=2), "use_cache": False}
    return Case(model, inputs)


# --------------------------------------------------------------------------
# timm
# --------------------------------------------------------------------------


@_seeded
def timm_convnext_atto():
    import timm
    return Case(timm.create_model("convnext_atto", pretrained=False, num_classes=10), _images)


@_seeded
def timm_vit_tiny():
    import timm
    model = timm.create_model("vit_tiny_patch16_224", pretrained=False, num_classes=10,
                              img_size=IMAGE, depth=LAYERS, embed_dim=HIDDEN, num_heads=HEADS)
    return Case(model, _images)


@_seeded
def timm_efficientnet_b0():
    import timm
    return Case(timm.create_model("efficientnet_b0", pretrained=False, num_classes=10), _images)


@_seeded
def timm_vit_drop_path():
    """Stochastic depth (DropPath, rate up to 0.5): random in train mode; the
    test reseeds the RNG before the eager and the compiled call."""
    import timm
    model = timm.create_model("vit_tiny_patch16_224", pretrained=False, num_classes=10,
                              img_size=IMAGE, depth=LAYERS, embed_dim=HIDDEN, num_heads=HEADS,
                              drop_path_rate=0.5)
    return Case(model, _images)


@dataclasses.dataclass(frozen=True)
class Counts:
    """Graphs and graph breaks of armature and torch.compile on one model in
    one mode; ``reason``: armature's first break reason where it makes more
    graphs (or runs something as Python)."""
    graphs: int
    torch_graphs: int
    breaks: int
    torch_breaks: int
    reason: str = ""


#: model -> mode ("eval", "train", "decode", "generate") -> Counts, filled by
#: test_models.py's graph-count tests and printed at the end of the run
#: (tests/models/README.md).
GRAPH_COUNTS: dict[str, dict[str, Counts]] = {}

BUILDERS = {
    "resnet18": tv_resnet18,
    "mobilenet_v3_small": tv_mobilenet_v3_small,
    "vit": tv_vit,
    "bert": hf_bert,
    "gpt2": hf_gpt2,
    "llama": hf_llama,
    "t5": hf_t5,
    "timm_convnext_atto": timm_convnext_atto,
    "timm_vit_tiny": timm_vit_tiny,
    "timm_efficientnet_b0": timm_efficientnet_b0,
    "swin_t": tv_swin_t,
    "fx_wrap_resnet": fx_wrap_resnet,
    "distilbert": hf_distilbert,
    "bart": hf_bart,
    "hf_vit": hf_vit,
    "whisper": hf_whisper,
    "qwen2": hf_qwen2,
    "mistral": hf_mistral,
    "t5_lm": hf_t5_generation,
    "trocr": hf_trocr,
    "xglm": hf_xglm,
    "timm_vit_drop_path": timm_vit_drop_path,
    "deberta_v2": hf_deberta_v2,
    "gpt2_loss": hf_gpt2_loss,
    "t5_cache": hf_t5_cache,
}
