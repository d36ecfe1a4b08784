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


#: (armature, torch.compile) graph counts per model, filled by test_models.py's
#: graph-count tests and printed at the end of the run (tests/models/README.md).
GRAPH_COUNTS: dict[str, tuple] = {}

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
}
