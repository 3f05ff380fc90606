"""The canonical operation vocabulary, and the tables that map PyTorch and ONNX operators onto it.

Every node of an `ArchGraph` carries one of the types in `OPS`, or `unknown:<name>` for an operator
no table knows (kept rather than dropped, so nothing silently disappears from a graph).
Operators in `FOLDED` only move or relabel data (views, reshapes, casts, dropout in eval); they are
removed and their input is wired straight to their consumers.
"""

from __future__ import annotations

# canonical type -> category. Categories group types for summaries and documentation.
OPS: dict[str, str] = {}


def _category(name: str, types: str) -> None:
    for op in types.split():
        OPS[op] = name


_category(
    "convolution",
    "conv1d conv2d conv3d depthwise_conv1d depthwise_conv2d depthwise_conv3d "
    "conv_transpose1d conv_transpose2d conv_transpose3d deform_conv2d",
)
_category("linear", "linear matmul bmm einsum embedding attention")
_category(
    "normalization",
    "batch_norm layer_norm group_norm instance_norm rms_norm local_response_norm l2_normalize",
)
_category(
    "activation",
    "relu relu6 leaky_relu prelu elu selu celu gelu silu mish sigmoid hard_sigmoid "
    "hard_swish tanh hardtanh softplus softsign glu threshold logsigmoid "
    "softmax log_softmax",
)
_category(
    "elementwise",
    "add sub mul div pow sqrt rsqrt exp log neg abs reciprocal clamp erf sin cos maximum "
    "minimum where round sign logical not_equal equal compare masked_fill",
)
_category("reduction", "mean sum reduce_max reduce_min argmax argmin cumsum var std norm topk sort")
_category(
    "pooling",
    "max_pool1d max_pool2d max_pool3d avg_pool1d avg_pool2d avg_pool3d adaptive_avg_pool1d "
    "adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d adaptive_max_pool2d "
    "adaptive_max_pool3d global_avg_pool global_max_pool",
)
_category(
    "structure",
    "concat stack split slice gather index_select scatter pad roll flip tile repeat "
    "pixel_shuffle pixel_unshuffle upsample_nearest upsample_linear grid_sample",
)
_category("recurrent", "lstm gru rnn")
RECURRENT = frozenset(("lstm", "gru", "rnn"))
RECURRENT_CALLS = frozenset(("lstm", "gru", "rnn_tanh", "rnn_relu"))
RECURRENT_STEPS = frozenset(("lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"))
_category("io", "input output")

# Operators that only move or relabel data: removed, their input wired to their consumers.
FOLDED = frozenset(
    ["view", "reshape", "_reshape_alias", "flatten", "unflatten", "squeeze", "unsqueeze", "expand", "expand_as", "contiguous", "clone", "alias", "detach", "lift_fresh_copy", "_to_copy", "to", "type_as", "copy", "_assert_tensor_metadata", "permute", "transpose", "t", "swapaxes", "movedim", "identity", "dropout", "feature_dropout", "alpha_dropout", "dropout1d", "dropout2d", "dropout3d", "getitem", "view_as", "reshape_as", "type", "float", "half", "double", "bfloat16", "long", "int", "bool", "cpu", "cuda", "channel_shuffle", "_unsafe_view", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Expand", "Identity", "Dropout", "Transpose", "Cast", "CastLike"]
)

# Operators whose result is shape metadata or a constant, never data that flows from the input.
NON_DATA = frozenset(
    ["size", "sym_size", "sym_numel", "sym_stride", "sym_storage_offset", "dim", "numel", "stride", "_assert_async", "_assert_scalar", "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "arange", "zeros", "ones", "full", "empty", "scalar_tensor", "_local_scalar_dense", "item", "Shape", "Size", "ConstantOfShape", "Range", "EyeLike", "RandomNormalLike", "RandomUniformLike", "Constant"]
)

# Bare PyTorch names (ATen ops, torch functions, Tensor methods, operator functions) -> canonical.
# Names that are already canonical need no entry.
TORCH_ALIASES: dict[str, str] = {
    "addmm": "linear",
    "linear": "linear",
    "mm": "matmul",
    "baddbmm": "bmm",
    "_grouped_mm": "bmm",  # mixture-of-experts: one matmul per expert, batched
    "grouped_mm": "bmm",
    "scaled_dot_product_attention": "attention",
    "_scaled_dot_product_flash_attention": "attention",
    "_scaled_dot_product_efficient_attention": "attention",
    "_scaled_dot_product_flash_attention_for_cpu": "attention",
    "_scaled_dot_product_cudnn_attention": "attention",
    "_native_batch_norm_legit_no_training": "batch_norm",
    "_native_batch_norm_legit": "batch_norm",
    "native_batch_norm": "batch_norm",
    "native_layer_norm": "layer_norm",
    "native_group_norm": "group_norm",
    "hardswish": "hard_swish",
    "hardsigmoid": "hard_sigmoid",
    "softmax": "softmax",
    "_softmax": "softmax",
    "_log_softmax": "log_softmax",
    "truediv": "div",
    "floordiv": "div",
    "true_divide": "div",
    "multiply": "mul",
    "subtract": "sub",
    "rsub": "sub",
    "iadd": "add",
    "isub": "sub",
    "imul": "mul",
    "itruediv": "div",
    "radd": "add",
    "rmul": "mul",
    "rtruediv": "div",
    "square": "pow",
    "clamp_min": "clamp",
    "clamp_max": "clamp",
    "clip": "clamp",
    "max": "reduce_max",
    "amax": "reduce_max",
    "min": "reduce_min",
    "amin": "reduce_min",
    "cat": "concat",
    "concatenate": "concat",
    "chunk": "split",
    "split_with_sizes": "split",
    "unbind": "split",
    "tensor_split": "split",
    "select": "slice",
    "narrow": "slice",
    "index": "gather",
    "take_along_dim": "gather",
    "constant_pad_nd": "pad",
    "reflection_pad2d": "pad",
    "replication_pad2d": "pad",
    "upsample_nearest2d": "upsample_nearest",
    "upsample_nearest1d": "upsample_nearest",
    "upsample_nearest3d": "upsample_nearest",
    "upsample_bilinear2d": "upsample_linear",
    "upsample_bicubic2d": "upsample_linear",
    "upsample_linear1d": "upsample_linear",
    "upsample_trilinear3d": "upsample_linear",
    "grid_sampler": "grid_sample",
    "grid_sampler_2d": "grid_sample",
    "masked_fill_": "masked_fill",
    "lt": "compare",
    "gt": "compare",
    "le": "compare",
    "ge": "compare",
    "eq": "equal",
    "ne": "not_equal",
    "logical_and": "logical",
    "logical_or": "logical",
    "logical_not": "logical",
    "bitwise_not": "logical",
    "and_": "logical",
    "or_": "logical",
    "invert": "logical",
    "rms_norm": "rms_norm",
    "normalize": "l2_normalize",
    "linalg_vector_norm": "norm",
    "frobenius_norm": "norm",
    "repeat_interleave": "repeat",
    "index_put": "scatter",
    "scatter_add": "scatter",
    "scatter_reduce": "scatter",
    "index_reduce": "scatter",
    "index_add": "scatter",
    "index_copy": "scatter",
    "slice_scatter": "scatter",
    "select_scatter": "scatter",
    "gelu_": "gelu",
    "log_sigmoid": "logsigmoid",
    "log_sigmoid_forward": "logsigmoid",
    "mean": "mean",
    "floor": "round",
    "ceil": "round",
    "floor_divide": "div",
    "embedding_bag": "embedding",
    "rrelu": "leaky_relu",
    "adaptive_max_pool2d_with_indices": "adaptive_max_pool2d",
    "max_pool2d_with_indices": "max_pool2d",
    "max_pool1d_with_indices": "max_pool1d",
    "max_pool3d_with_indices": "max_pool3d",
    "_adaptive_avg_pool2d": "adaptive_avg_pool2d",
    "lstm": "lstm",
    "gru": "gru",
    "rnn_tanh": "rnn",
    "rnn_relu": "rnn",
    # one step of the same recurrence (a cell called in a loop is folded into one node)
    "lstm_cell": "lstm",
    "gru_cell": "gru",
    "rnn_tanh_cell": "rnn",
    "rnn_relu_cell": "rnn",
    "matmul": "matmul",
    "dot": "matmul",
    "vdot": "matmul",
    "mv": "matmul",
    # pairwise distances (a VQ-VAE's codebook search): the product x·yᵀ and two norms, as code that
    # writes the distance out spells it; its MACs are the product's
    "cdist": "matmul",
    "_cdist_forward": "matmul",
    "_euclidean_dist": "matmul",
    "pixel_shuffle": "pixel_shuffle",
    "channel_shuffle": "channel_shuffle",
}

# ONNX operator types (default domain) -> canonical. Convolutions and a few others are mapped with
# their attributes in `trace_onnx`.
ONNX_ALIASES: dict[str, str] = {
    "Gemm": "linear",
    "MatMul": "matmul",
    "Einsum": "einsum",
    "Gather": "gather",
    "GatherElements": "gather",
    "GatherND": "gather",
    "Attention": "attention",
    "BatchNormalization": "batch_norm",
    "LayerNormalization": "layer_norm",
    "GroupNormalization": "group_norm",
    "InstanceNormalization": "instance_norm",
    "RMSNormalization": "rms_norm",
    "SimplifiedLayerNormalization": "rms_norm",
    "LRN": "local_response_norm",
    "LpNormalization": "l2_normalize",
    "Relu": "relu",
    "LeakyRelu": "leaky_relu",
    "PRelu": "prelu",
    "Elu": "elu",
    "Selu": "selu",
    "Celu": "celu",
    "Gelu": "gelu",
    "FastGelu": "gelu",
    "Mish": "mish",
    "Sigmoid": "sigmoid",
    "HardSigmoid": "hard_sigmoid",
    "HardSwish": "hard_swish",
    "Tanh": "tanh",
    "Softplus": "softplus",
    "Softsign": "softsign",
    "ThresholdedRelu": "threshold",
    "Softmax": "softmax",
    "LogSoftmax": "log_softmax",
    "Add": "add",
    "Sub": "sub",
    "Mul": "mul",
    "Div": "div",
    "Pow": "pow",
    "Sqrt": "sqrt",
    "Exp": "exp",
    "Log": "log",
    "Neg": "neg",
    "Abs": "abs",
    "Reciprocal": "reciprocal",
    "Clip": "clamp",
    "Erf": "erf",
    "Sin": "sin",
    "Cos": "cos",
    "Max": "maximum",
    "Min": "minimum",
    "Where": "where",
    "Floor": "round",
    "Ceil": "round",
    "Round": "round",
    "Sign": "sign",
    "And": "logical",
    "Or": "logical",
    "Not": "logical",
    "Xor": "logical",
    "Equal": "equal",
    "Less": "compare",
    "Greater": "compare",
    "LessOrEqual": "compare",
    "GreaterOrEqual": "compare",
    "ReduceMean": "mean",
    "ReduceSum": "sum",
    "ReduceMax": "reduce_max",
    "ReduceMin": "reduce_min",
    "ReduceL2": "norm",
    "ReduceL1": "norm",
    "ArgMax": "argmax",
    "ArgMin": "argmin",
    "CumSum": "cumsum",
    "TopK": "topk",
    "GlobalAveragePool": "global_avg_pool",
    "GlobalMaxPool": "global_max_pool",
    "Concat": "concat",
    "Split": "split",
    "Slice": "slice",
    "ScatterND": "scatter",
    "ScatterElements": "scatter",
    "Pad": "pad",
    "Tile": "tile",
    "DepthToSpace": "pixel_shuffle",
    "SpaceToDepth": "pixel_unshuffle",
    "GridSample": "grid_sample",
    "LSTM": "lstm",
    "GRU": "gru",
    "RNN": "rnn",
    "Trilu": "where",
}

# nn.Module class names (torch.fx leaf modules, first-layer inference) -> canonical, when the
# class name alone decides it. Convolutions need their attributes and are handled in code.
MODULE_ALIASES: dict[str, str] = {
    "Linear": "linear",
    "LazyLinear": "linear",
    "Bilinear": "linear",
    "Embedding": "embedding",
    "EmbeddingBag": "embedding",
    "BatchNorm1d": "batch_norm",
    "BatchNorm2d": "batch_norm",
    "BatchNorm3d": "batch_norm",
    "SyncBatchNorm": "batch_norm",
    "LayerNorm": "layer_norm",
    "GroupNorm": "group_norm",
    "InstanceNorm1d": "instance_norm",
    "InstanceNorm2d": "instance_norm",
    "InstanceNorm3d": "instance_norm",
    "RMSNorm": "rms_norm",
    "LocalResponseNorm": "local_response_norm",
    "ReLU": "relu",
    "ReLU6": "relu6",
    "LeakyReLU": "leaky_relu",
    "PReLU": "prelu",
    "RReLU": "leaky_relu",
    "ELU": "elu",
    "SELU": "selu",
    "CELU": "celu",
    "GELU": "gelu",
    "SiLU": "silu",
    "Mish": "mish",
    "Sigmoid": "sigmoid",
    "Hardsigmoid": "hard_sigmoid",
    "Hardswish": "hard_swish",
    "Tanh": "tanh",
    "Hardtanh": "hardtanh",
    "Softplus": "softplus",
    "Softsign": "softsign",
    "GLU": "glu",
    "Threshold": "threshold",
    "LogSigmoid": "logsigmoid",
    "Softmax": "softmax",
    "LogSoftmax": "log_softmax",
    "MaxPool1d": "max_pool1d",
    "MaxPool2d": "max_pool2d",
    "MaxPool3d": "max_pool3d",
    "AvgPool1d": "avg_pool1d",
    "AvgPool2d": "avg_pool2d",
    "AvgPool3d": "avg_pool3d",
    "AdaptiveAvgPool1d": "adaptive_avg_pool1d",
    "AdaptiveAvgPool2d": "adaptive_avg_pool2d",
    "AdaptiveAvgPool3d": "adaptive_avg_pool3d",
    "AdaptiveMaxPool1d": "adaptive_max_pool1d",
    "AdaptiveMaxPool2d": "adaptive_max_pool2d",
    "AdaptiveMaxPool3d": "adaptive_max_pool3d",
    "MultiheadAttention": "attention",
    "PixelShuffle": "pixel_shuffle",
    "PixelUnshuffle": "pixel_unshuffle",
    "Upsample": "upsample_nearest",
    "UpsamplingNearest2d": "upsample_nearest",
    "UpsamplingBilinear2d": "upsample_linear",
    "LSTM": "lstm",
    "GRU": "gru",
    "RNN": "rnn",
    "LSTMCell": "lstm",
    "GRUCell": "gru",
    "RNNCell": "rnn",
    "Flatten": "flatten",
    "Unflatten": "unflatten",
    "Identity": "identity",
    "Dropout": "dropout",
    "Dropout1d": "dropout",
    "Dropout2d": "dropout",
    "Dropout3d": "dropout",
    "AlphaDropout": "dropout",
}


def bare_name(name: str) -> str:
    """`aten::conv2d`, `__iadd__`, `relu_` -> `conv2d`, `iadd`, `relu`."""
    name = name.rsplit("::", 1)[-1]
    if name.startswith("__") and name.endswith("__"):
        name = name[2:-2]
    # in-place variants (relu_, add_) are the same operation
    if name.endswith("_") and not name.startswith("_"):
        name = name[:-1]
    return name


def canonical_torch(name: str) -> str:
    """Canonical type of a bare PyTorch operator name, `unknown:<name>` when none is known.

    Folded and non-data names are returned as themselves; callers check `FOLDED` / `NON_DATA`.
    """
    if name in FOLDED or name in NON_DATA:
        return name
    op = TORCH_ALIASES.get(name, name)
    return op if op in OPS else f"unknown:{name}"


def canonical_onnx(op_type: str, domain: str = "") -> str:
    """Canonical type of an ONNX operator, `unknown:<op>` when none is known."""
    if op_type in FOLDED or op_type in NON_DATA:
        return op_type
    if domain not in ("", "ai.onnx", "com.microsoft"):
        return f"unknown:{op_type}"
    op = ONNX_ALIASES.get(op_type)
    return op if op else f"unknown:{op_type}"


def conv_type(spatial_dims: int, groups: int, in_channels: int, out_channels: int,
              transposed: bool = False) -> str:
    """conv1d/2d/3d, their depthwise forms (one group per input channel), or conv_transpose."""
    dims = min(max(spatial_dims, 1), 3)
    if transposed:
        return f"conv_transpose{dims}d"
    if groups > 1 and groups == in_channels and out_channels % in_channels == 0:
        return f"depthwise_conv{dims}d"
    return f"conv{dims}d"


def pool_type(kind: str, spatial_dims: int) -> str:
    """`max_pool2d` etc. from a pool kind (`max`, `avg`, `adaptive_avg`, ...) and its rank."""
    return f"{kind}_pool{min(max(spatial_dims, 1), 3)}d"
