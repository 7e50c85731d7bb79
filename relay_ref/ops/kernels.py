"""Fast kernels of the built-in operators: ``OpDef.kernels["cpu"]`` (registry data, as
``patterns.py`` is for fusion patterns).

Each entry names a kernel ``"module:function"`` (a ``KernelRef``, imported when the executor
first runs it). The kernels follow the protocol in ``registry.KernelRef``: the reference's
signature plus ``out=``. The adapters in ``relay_ref/ops/cpu_*.py`` read the op's attributes,
pick a ``relay_ref.compute.cpu`` kernel for the cases it speeds up and call the op's NumPy
reference for the rest, so every entry is correct for every input the reference accepts.
Ops named nowhere run their reference inside compiled plans. The plain elementwise ops
have a kernel too (``cpu_elementwise.py``): inside fused groups of large tensors they run
in generated numba kernels, but small tensors run op by op, where a ufunc call without the
reference's checks is what counts.

``BUILTIN_CUDA_KERNELS`` is the same table for ``kernels["cuda"]`` (``cuda_ops.py`` over
``relay_ref.compute.cuda``; the CUDA protocol adds ``supports``, see that module).

These are the ``kernel:cpu`` and ``kernel:cuda`` aspects' tables (the rule:
``relay_ref/ops/__init__.py``), attached by the package with ``registry.attach``; a user's
later ``set_kernel`` replaces an entry. Every entry loads (``tests/ops/test_kernels_table.py``)
and names a function of ``cpu_*.py`` (CPU) or ``cuda_ops.py`` (CUDA).
"""

from __future__ import annotations

_NN = "relay_ref.ops.cpu_nn"
_TENSOR = "relay_ref.ops.cpu_tensor"
_EW = "relay_ref.ops.cpu_elementwise"
_CUDA = "relay_ref.ops.cuda_ops"
_GRAD = "relay_ref.ops.cpu_grad"

#: the plain elementwise ops (``tensor.plain_ufunc``): one ufunc call, no checks
_PLAIN_UFUNC_OPS = (
    "add", "subtract", "multiply", "maximum", "minimum", "equal", "not_equal", "less",
    "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "logical_xor",
    "exp", "fast_exp", "log", "log2", "log10", "sqrt", "tanh", "fast_tanh", "erf",
    "fast_erf", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
    "acosh", "atanh",
)

BUILTIN_CPU_KERNELS: dict[str, str] = {
    # convolutions and pooling (cpu_nn.py over compute/cpu/conv.py, pool.py)
    "nn.conv2d": f"{_NN}:conv2d",
    "nn.max_pool2d": f"{_NN}:max_pool2d",
    "nn.avg_pool2d": f"{_NN}:avg_pool2d",
    "nn.global_avg_pool2d": f"{_NN}:global_avg_pool2d",
    "nn.global_max_pool2d": f"{_NN}:global_max_pool2d",
    # the training step's gradient ops (cpu_grad.py over compute/cpu/conv_grad.py, pool_grad.py)
    "nn.conv2d_transpose": f"{_GRAD}:conv2d_transpose",
    "nn.max_pool2d_grad": f"{_GRAD}:max_pool2d_grad",
    "nn.avg_pool2d_grad": f"{_GRAD}:avg_pool2d_grad",
    # BLAS, softmax, normalisation, reductions, layout (cpu_tensor.py over compute/cpu/*)
    "nn.dense": f"{_TENSOR}:dense",
    "nn.matmul": f"{_TENSOR}:matmul",
    "nn.batch_matmul": f"{_TENSOR}:batch_matmul",
    "nn.softmax": f"{_TENSOR}:softmax",
    "nn.log_softmax": f"{_TENSOR}:log_softmax",
    "nn.layer_norm": f"{_TENSOR}:layer_norm",
    "nn.bias_add": f"{_TENSOR}:bias_add",
    "sum": f"{_TENSOR}:sum",
    "mean": f"{_TENSOR}:mean",
    "max": f"{_TENSOR}:max",
    "min": f"{_TENSOR}:min",
    "reshape": f"{_TENSOR}:reshape",
    "transpose": f"{_TENSOR}:transpose",
    "concatenate": f"{_TENSOR}:concatenate",
    "squeeze": f"{_TENSOR}:squeeze",
    "expand_dims": f"{_TENSOR}:expand_dims",
    "nn.batch_flatten": f"{_TENSOR}:batch_flatten",
    # elementwise ops outside fused kernels (cpu_elementwise.py)
    **{name: f"{_EW}:{name}" for name in _PLAIN_UFUNC_OPS},
}


BUILTIN_CUDA_KERNELS: dict[str, str] = {
    "nn.conv2d": f"{_CUDA}:conv2d",
    "nn.dense": f"{_CUDA}:dense",
    "nn.matmul": f"{_CUDA}:matmul",
    "nn.batch_matmul": f"{_CUDA}:batch_matmul",
    "nn.max_pool2d": f"{_CUDA}:max_pool2d",
    "nn.avg_pool2d": f"{_CUDA}:avg_pool2d",
    "nn.global_avg_pool2d": f"{_CUDA}:global_avg_pool2d",
    "nn.global_max_pool2d": f"{_CUDA}:global_max_pool2d",
    "nn.softmax": f"{_CUDA}:softmax",
    "nn.log_softmax": f"{_CUDA}:log_softmax",
    "sum": f"{_CUDA}:reduce_sum",
    "mean": f"{_CUDA}:reduce_mean",
    "max": f"{_CUDA}:reduce_max",
    "min": f"{_CUDA}:reduce_min",
    # views: no launch (a device array reshaped)
    "reshape": f"{_CUDA}:view",
    "squeeze": f"{_CUDA}:view",
    "expand_dims": f"{_CUDA}:view",
    "nn.batch_flatten": f"{_CUDA}:view",
}
