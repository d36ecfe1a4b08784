"""The models of PyTorch's benchmark dashboard, built offline for benchmarks/dashboard.py.

The lists are PyTorch's (pytorch/pytorch ``benchmarks/dynamo``):

* ``huggingface_models_list_cpu.txt``: 28 HuggingFace models and their batch
  sizes;
* ``timm_models_list.txt``: today's 18 timm models, plus the 60 of the
  list's earlier version (still named in
  ``ci_expected_accuracy/dynamo_eager_timm_training.csv``), 64 models in all;
* the graph-break counts PyTorch's CI expects (``dynamo_eager_*.csv``; for
  their harness, which compiles the whole step with the optimizer, so only a
  reference, not what our table compares against).

Models are built the way PyTorch's ``huggingface.py`` and ``timm_models.py``
build them, without the hub: a transformers model from its config class
(``Model(Config(...))``; the few that PyTorch reads with
``AutoConfig.from_pretrained`` get the published config's values written
here), a timm model with ``create_model(name, pretrained=False)``; random
weights, seeded.  What is smaller than PyTorch's run is written down per
model (``Built.reduced``) and lands in the table:

* HuggingFace: 2 layers (encoder and decoder each), hidden size at most
  256 with 4 heads and a 4x feed-forward, a vocabulary of 1024, batch 2,
  sequence 64 (BigBird 256, so that block-sparse attention is used);
  dropout probabilities 1e-30 as PyTorch sets them (the dropout ops run,
  nothing is dropped); inputs as ``generate_inputs_for_model`` makes them,
  labels included;
* timm: the model as named (no depth or width change), batch 2, images of
  the smallest of 64, 96 or 128 pixels the model takes (``img_size=`` for
  those whose position embeddings fix the size), else its own input size;
  ``drop_rate=0``, no drop path, as PyTorch builds them.
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
from typing import Any, Callable

import torch

BATCH = 2
SEQ = 64
HIDDEN_MAX = 256
HEADS = 4
LAYERS = 2
VOCAB = 1024
TIMM_SIZES = (64, 96, 128)

# ---------------------------------------------------------------- the lists

#: huggingface_models_list_cpu.txt: name -> PyTorch's batch size
HF_MODELS = {
    "AlbertForMaskedLM": 4, "AllenaiLongformerBase": 4, "BartForCausalLM": 4, "BertForMaskedLM": 16,
    "BigBird": 32, "BlenderbotForCausalLM": 32, "DebertaV2ForMaskedLM": 16, "DistilBertForMaskedLM": 128,
    "DistillGPT2": 16, "ElectraForCausalLM": 8, "GoogleFnet": 16, "GPT2ForSequenceClassification": 4,
    "LayoutLMForMaskedLM": 16, "M2M100ForConditionalGeneration": 16, "MBartForCausalLM": 4,
    "MegatronBertForCausalLM": 4, "MobileBertForMaskedLM": 64, "MT5ForConditionalGeneration": 16,
    "OPTForCausalLM": 2, "PegasusForCausalLM": 32, "PLBartForCausalLM": 8, "RobertaForCausalLM": 16,
    "T5ForConditionalGeneration": 4, "T5Small": 1, "TrOCRForCausalLM": 32, "XGLMForCausalLM": 8,
    "XLNetLMHeadModel": 8, "YituTechConvBert": 16,
}

#: timm_models_list.txt today (18), then the 60 of its earlier version not in it
TIMM_MODELS = [
    "adv_inception_v3", "beit_base_patch16_224", "convnextv2_nano.fcmae_ft_in22k_in1k",
    "deit_base_distilled_patch16_224", "deit_tiny_patch16_224.fb_in1k", "dm_nfnet_f0", "ghostnet_100",
    "inception_v3", "mobilenetv2_100", "mobilenetv3_large_100", "mobilevit_s", "nfnet_l0", "repvgg_a2",
    "swin_base_patch4_window7_224", "tf_efficientnet_b0", "visformer_small", "vit_base_patch14_dinov2.lvd142m",
    "vit_base_patch16_siglip_256",
    # the earlier list
    "botnet26t_256", "coat_lite_mini", "convit_base", "convmixer_768_32", "convnext_base", "crossvit_9_240",
    "cspdarknet53", "dla102", "dpn107", "eca_botnext26ts_256", "eca_halonext26ts", "ese_vovnet19b_dw",
    "fbnetc_100", "fbnetv3_b", "gernet_l", "gluon_inception_v3", "gmixer_24_224", "gmlp_s16_224", "hrnet_w18",
    "jx_nest_base", "lcnet_050", "levit_128", "mixer_b16_224", "mixnet_l", "mnasnet_100", "pit_b_224",
    "pnasnet5large", "poolformer_m36", "regnety_002", "res2net101_26w_4s", "res2net50_14w_8s", "res2next50",
    "resmlp_12_224", "resnest101e", "rexnet_100", "sebotnet33ts_256", "selecsls42b", "spnasnet_100",
    "swsl_resnext101_32x16d", "tf_mixnet_l", "tinynet_a", "tnt_s_patch16_224", "twins_pcpvt_base",
    "vit_base_patch16_224", "volo_d1_224", "xcit_large_24_p8_224",
]

#: graph breaks PyTorch's CI expects with backend "eager" (ci_expected_accuracy/dynamo_eager_{list}_{mode}.csv).
#: Their harness compiles the whole step (forward, loss, backward, optimizer); ours the model: a reference only.
_PT_CI_HF_INFERENCE = {"AllenaiLongformerBase": 4, "DistillGPT2": 2}        # the others listed: 0
_PT_CI_HF_TRAIN = {"AllenaiLongformerBase": 9, "BartForCausalLM": 13, "MBartForCausalLM": 13, "OPTForCausalLM": 13,
                   "PLBartForCausalLM": 13, "PegasusForCausalLM": 13, "TrOCRForCausalLM": 13, "XGLMForCausalLM": 13,
                   "MobileBertForMaskedLM": 3, "GPT2ForSequenceClassification": 7,
                   "BlenderbotForCausalLM": None, "DebertaV2ForMaskedLM": None}   # the others listed: 5
_PT_CI_TIMM_INFERENCE = {"adv_inception_v3", "beit_base_patch16_224", "convit_base", "convnext_base",
                         "deit_base_distilled_patch16_224", "dla102", "dm_nfnet_f0", "dpn107", "eca_botnext26ts_256",
                         "eca_halonext26ts", "gernet_l", "ghostnet_100", "gluon_inception_v3", "gmixer_24_224",
                         "hrnet_w18", "inception_v3", "jx_nest_base", "mixer_b16_224", "mobilenetv2_100",
                         "mobilenetv3_large_100", "mobilevit_s", "nfnet_l0", "repvgg_a2", "res2net101_26w_4s",
                         "sebotnet33ts_256", "selecsls42b", "spnasnet_100", "swin_base_patch4_window7_224",
                         "swsl_resnext101_32x16d", "tf_efficientnet_b0", "twins_pcpvt_base", "visformer_small",
                         "vit_base_patch16_224", "xcit_large_24_p8_224"}   # all 0
_PT_CI_TIMM_NEW = {"convnextv2_nano.fcmae_ft_in22k_in1k", "deit_tiny_patch16_224.fb_in1k",
                   "vit_base_patch14_dinov2.lvd142m", "vit_base_patch16_siglip_256"}
_PT_CI_TIMM_TRAIN_6 = {"convmixer_768_32", "hrnet_w18", "pnasnet5large"}   # the other 57 listed: 8


def pt_ci_breaks(name: str, mode: str) -> int | None:
    """The graph breaks PyTorch's CI expects for ``name`` (None: not listed, or not a pass there)."""
    if name in HF_MODELS:
        if name == "BigBird":
            return None
        if mode == "inference":
            return None if name == "DebertaV2ForMaskedLM" else _PT_CI_HF_INFERENCE.get(name, 0)
        return _PT_CI_HF_TRAIN.get(name, 5)
    if mode == "inference":
        return 0 if name in _PT_CI_TIMM_INFERENCE else None
    if name in _PT_CI_TIMM_NEW:
        return None      # new in today's list: not in the training CSV
    return 6 if name in _PT_CI_TIMM_TRAIN_6 else 8


def suite_of(name: str) -> str | None:
    if name in HF_MODELS:
        return "hf"
    if name in TIMM_MODELS:
        return "timm"
    return None


# ---------------------------------------------------------------- building


@dataclasses.dataclass
class Built:
    model: torch.nn.Module
    args: tuple
    kwargs: dict
    loss: Callable[[Any], torch.Tensor]   # model output -> scalar loss (training)
    reduced: str                          # what differs from PyTorch's run
    inputs: str                           # the inputs, in words


def build(name: str) -> Built:
    """The model ``name`` with its inputs, seeded (train/eval mode left to the caller)."""
    torch.manual_seed(0)
    suite = suite_of(name)
    if suite == "hf":
        return _build_hf(name)
    if suite == "timm":
        return _build_timm(name)
    raise KeyError(f"{name!r} is in neither list (see --list)")


# ---- HuggingFace

#: dashboard names whose class is not the name (PyTorch's EXTRA_MODELS and
#: get_module_cls_by_model_name), with the published config's own values
#: for the ones PyTorch reads from the hub
_HF_EXTRA = {
    "AllenaiLongformerBase": ("LongformerForMaskedLM", dict(attention_window=16)),
    "BigBird": ("BigBirdForMaskedLM", dict(attention_type="block_sparse", block_size=16, num_random_blocks=2)),
    "DistillGPT2": ("GPT2LMHeadModel", dict(n_layer=6)),          # distilgpt2: GPT-2 with 6 layers
    "GoogleFnet": ("FNetForMaskedLM", {}),                         # google/fnet-base: FNetConfig's defaults
    "YituTechConvBert": ("ConvBertForMaskedLM", {}),               # YituTech/conv-bert-base: the defaults
    "T5Small": ("T5ForConditionalGeneration", {}),                 # t5-small: T5Config's defaults
    "TrOCRForCausalLM": ("transformers.models.trocr.modeling_trocr.TrOCRForCausalLM", {}),
}

_LAYER_KEYS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers", "decoder_layers",
               "num_decoder_layers")
_HIDDEN_KEYS = ("hidden_size", "d_model", "n_embd", "dim")
_HEAD_KEYS = ("num_attention_heads", "n_head", "n_heads", "num_heads", "encoder_attention_heads",
              "decoder_attention_heads", "attention_heads")
_FFN_KEYS = ("intermediate_size", "d_ff", "d_inner", "encoder_ffn_dim", "decoder_ffn_dim", "ffn_dim", "hidden_dim")


def _hf_class(path: str):
    if "." in path:
        mod, _, cls = path.rpartition(".")
        return getattr(importlib.import_module(mod), cls)
    import transformers
    return getattr(transformers, path)


def hf_config(name: str):
    """(model class, config, the reductions in words) for a dashboard name."""
    cls_path, fixed = _HF_EXTRA.get(name, (name, {}))
    cls = _hf_class(cls_path)
    config_cls = cls.config_class
    default = config_cls(**fixed)
    params = set(inspect.signature(config_cls.__init__).parameters)

    def known(key):
        return (key in params or key in fixed) and getattr(default, key, None) is not None

    over: dict = {}
    for k in _LAYER_KEYS:
        if known(k) and getattr(default, k) > LAYERS:
            over[k] = LAYERS
    hidden = next((getattr(default, k) for k in _HIDDEN_KEYS if known(k)), None)
    if hidden is not None and hidden > HIDDEN_MAX:
        for k in _HIDDEN_KEYS:
            if known(k):
                over[k] = HIDDEN_MAX
        for k in _HEAD_KEYS:
            if known(k):
                over[k] = HEADS
        for k in _FFN_KEYS:
            if known(k):
                over[k] = 4 * HIDDEN_MAX
        for k in ("word_embed_proj_dim",):       # OPT projects the embeddings unless this is the hidden size
            if known(k):
                over[k] = HIDDEN_MAX
        if known("d_kv"):                         # T5: heads * d_kv is the attention's width
            over["d_kv"] = HIDDEN_MAX // HEADS
    if known("vocab_size") and default.vocab_size > VOCAB:
        over["vocab_size"] = VOCAB
    if name == "GPT2ForSequenceClassification" or name.startswith("Roberta"):
        over["pad_token_id"] = 0                  # as PyTorch sets it (batch > 1 needs a pad token)
    # PyTorch sets every float "drop" attribute to 1e-30 (after building; here before, so the
    # modules get it too): the dropout ops run, nothing is dropped, outputs are deterministic
    drops = {k: 1e-30 for k in dir(default)
             if "drop" in k and isinstance(getattr(default, k, None), float) and not k.startswith("_")}
    config = config_cls(**{**fixed, **over})
    for k, v in drops.items():
        setattr(config, k, v)
    if hasattr(config, "use_cache"):
        config.use_cache = False                  # as PyTorch does
    reduced = ", ".join(f"{k}={v}" for k, v in {**fixed, **over}.items() if k != "pad_token_id")
    return cls, config, reduced


def _rand_ids(high: int, shape, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, max(high, 1), shape, generator=g, dtype=torch.int64)


def _hf_inputs(name: str, cls, config) -> dict:
    """generate_inputs_for_model of PyTorch's huggingface.py, with labels."""
    seq = 256 if name == "BigBird" else SEQ
    vocab = config.vocab_size
    shape = (BATCH, seq)
    ids = _rand_ids(1 if name.startswith("Roberta") else vocab, shape, 1)
    if "Bart" in name:
        ids[:, -1] = config.eos_token_id
    inputs = {"input_ids": ids}
    if name.startswith(("T5", "M2M100", "MT5")):
        inputs["decoder_input_ids"] = ids
    if name.endswith("SequenceClassification"):
        inputs["labels"] = _rand_ids(config.num_labels - 1, (BATCH,), 2)
    elif name.endswith("ForConditionalGeneration"):
        inputs["labels"] = _rand_ids(vocab - 1, shape, 2)
    else:   # MaskedLM, CausalLM, HeadModel and the extra models
        inputs["labels"] = _rand_ids(vocab, shape, 2)
    return inputs


def _hf_loss(out):
    return out[0]   # PyTorch's compute_loss: the model's own loss (labels are passed)


def _build_hf(name: str) -> Built:
    cls, config, reduced = hf_config(name)
    torch.manual_seed(0)
    model = cls(config) if "auto" not in cls.__module__ else cls.from_config(config)
    model = model.to(dtype=torch.float32)
    inputs = _hf_inputs(name, cls, config)
    desc = ", ".join(f"{k} {tuple(v.shape)}" for k, v in inputs.items())
    return Built(model, (), inputs, _hf_loss, reduced, desc)


# ---- timm


def _timm_create(name: str, **extra):
    import timm
    return timm.create_model(name, pretrained=False, in_chans=3, scriptable=False, drop_rate=0.0,
                             drop_path_rate=None, drop_block_rate=None, **extra)


def _timm_try(model, size: int) -> bool:
    try:
        with torch.no_grad():
            model.eval()(torch.randn(1, 3, size, size))
        return True
    except Exception:  # noqa: BLE001  (the model does not take this size: use its own)
        return False


def _build_timm(name: str) -> Built:
    """The smallest of TIMM_SIZES (below the model's own size) the model runs
    on as built, else with ``img_size=`` (models whose position embeddings or
    windows fix the size), else its own size."""
    torch.manual_seed(0)
    model = _timm_create(name)
    default = tuple(model.pretrained_cfg.get("input_size", (3, 224, 224)))[-1]
    sizes = [s for s in TIMM_SIZES if s < default]
    size = next((s for s in sizes if _timm_try(model, s)), None)
    extra: dict = {}
    if size is None:
        for s in sizes:
            try:
                torch.manual_seed(0)
                small = _timm_create(name, img_size=s)
            except Exception:  # noqa: BLE001  (no img_size argument)
                break
            if _timm_try(small, s):
                model, size, extra = small, s, {"img_size": s}
                break
    size = size or default
    g = torch.Generator().manual_seed(1337)
    x = torch.randint(256, size=(BATCH, 3, size, size), generator=g).to(torch.float32)
    x = (x - x.mean()) / x.std()           # as timm_models.py normalises its input
    note = ""
    if size != default:
        note = f"{default}px -> {size}px" + (f" (img_size={size})" if extra else "")
    return Built(model, (x,), {}, _timm_loss, note, f"images {tuple(x.shape)}")


def _timm_loss(out):
    """reduce_to_scalar_loss of torch._dynamo.testing, written out: the mean of
    the (first) output."""
    if isinstance(out, (tuple, list)):
        out = out[0]
    return out.sum() / out.numel()
