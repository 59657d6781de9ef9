"""PyTorch CPU tensors as zero-copy NumPy views, for every posenc function.

posenc never imports torch: a tensor can only exist once the caller has imported torch, so
`sys.modules` tells whether to look for one. Each public function is wrapped by
`accepts_tensors`: with no tensor among its arguments it is called as it is; otherwise each
tensor argument becomes a NumPy view of the same memory (float32, float16 and the integer
types as themselves; bfloat16, which NumPy lacks, as uint16 holding its bits, the storage
posenc's functions read as bfloat16 by default), the function runs on the views, and an
array it returns becomes a tensor again: the caller's own tensor where the function wrote
into it (dst=, out=, in place), else a new tensor sharing the new array's memory, bfloat16
where the array holds bfloat16 bits.

Autograd. A tensor that requires grad, with grad mode on, is never detached silently:
  - the out-of-place rotations (rope_out, mrope_out, rope_apply; `differentiable` names
    their src) record themselves: a torch.autograd.Function whose backward is the same call
    with the inverse rotation (y = att R(a) x, so dL/dx = att R(-a) dL/dy: posenc's
    POSENC_ROPE_INVERSE with the same plan, positions and factors; elements past rotary_dim
    are copied, and so is their gradient), in src's dtype;
  - every other case (an in-place function, a destination given, a gradient wanted for an
    argument that is not differentiable: positions, masks, slopes, tables, frequencies) is
    a RuntimeError naming the function and the argument, and saying how to call it instead
    (torch.no_grad(), .detach(), or the out-of-place function that records gradients).
"""

import functools
import inspect
import sys

import numpy as np

# the torch dtypes taken (bfloat16 as uint16 bits: NumPy has no bfloat16; float8_e4m3fn, an
# fp8 cache for rope_out_fp8, as uint8 bytes)
_TAKEN = frozenset({"float32", "float16", "float64", "int64", "int32", "int16", "int8", "uint8",
                    "bool", "bfloat16", "float8_e4m3fn"})


def _torch():
    return sys.modules.get("torch")


def _tensor_type():
    torch = _torch()
    return None if torch is None else getattr(torch, "Tensor", None)


def as_array(name, tensor):
    """A NumPy view of a CPU tensor's memory (strides kept; bfloat16 as uint16 bits). The
    caller has checked that autograd does not need this tensor (accepts_tensors)."""
    if tensor.device.type != "cpu":
        raise TypeError(f"{name} is a tensor on {tensor.device}; posenc runs on the CPU: pass a "
                        "CPU tensor")
    kind = str(tensor.dtype).replace("torch.", "")
    if kind not in _TAKEN:
        raise TypeError(f"{name} has dtype {tensor.dtype}; posenc takes float32, bfloat16 and "
                        "float16 tensors (integer tensors for positions, bool for masks)")
    tensor = tensor.detach()  # the same memory (.numpy() refuses tensors that require grad)
    if kind == "bfloat16":
        torch = sys.modules["torch"]
        return tensor.view(torch.int16).numpy().view(np.uint16)
    if kind == "float8_e4m3fn":
        return tensor.view(sys.modules["torch"].uint8).numpy()
    return tensor.numpy()


def as_tensor(array):
    """A tensor sharing a new array's memory: uint16 (posenc's bfloat16 storage) becomes
    bfloat16."""
    torch = sys.modules["torch"]
    if array.dtype == np.uint16:
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


_IN_PLACE = {"rope": "rope_out", "mrope": "mrope_out", "rope_rerotate": None,
             "sinusoid_add": None, "alibi_add": None, "alibi_softmax": None, "learned_add": None}


def _no_grad_error(function, name, differentiable, bound):
    """The RuntimeError for a tensor argument `name` that requires grad where posenc
    records no gradient."""
    call = f"posenc.{function.__name__}"
    instead = "call it under torch.no_grad(), or pass the tensor .detach()ed"
    if function.__name__ in _IN_PLACE:
        why = f"{call} writes {name} in place, which autograd cannot record"
        out_of_place = _IN_PLACE[function.__name__]
        if out_of_place:
            instead = (f"use posenc.{out_of_place}(...), which records the gradient (the "
                       f"inverse rotation), or {instead}")
    elif differentiable and name == differentiable:
        target = "dst" if bound.get("dst") is not None else "out"
        why = (f"{call} writes into the {target} given, which autograd cannot record: leave "
               f"{target}= out to get a new tensor with a gradient, or")
        instead = instead[0].lower() + instead[1:]
    elif differentiable:
        why = (f"{call} records the gradient of {differentiable} only, and {name} requires "
               "grad")
    else:
        why = f"{call} records no gradient ({name} requires grad)"
    return RuntimeError(f"{why}; {instead}. posenc never detaches a tensor silently.")


_rotation_function = None


def _rotation():
    """The torch.autograd.Function of the out-of-place rotations (made on first use: torch
    is imported only by the caller)."""
    global _rotation_function
    if _rotation_function is None:
        torch = sys.modules["torch"]

        class PosencRotation(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, call):
                ctx.call = call
                ctx.src_dtype = x.dtype
                return call(x.detach(), False)

            @staticmethod
            def backward(ctx, grad):
                if grad.dtype != ctx.src_dtype:
                    grad = grad.to(ctx.src_dtype)  # float32 src, 16-bit result: exact
                if grad.dim() and grad.shape[-1] > 1 and grad.stride(-1) != 1:
                    grad = grad.contiguous()
                return ctx.call(grad, True), None

        _rotation_function = PosencRotation
    return _rotation_function


def accepts_tensors(function, widen=(), differentiable=None):
    """Wraps a posenc function so that it takes torch CPU tensors wherever it takes NumPy
    arrays, and returns tensors when it was given any (see the module's docstring). widen:
    names of arguments read as float32 values, whose bfloat16 tensors are widened to float32
    (a copy, exact) rather than viewed as uint16 bits (softmax's mask). differentiable: the
    argument gradients flow through (an out-of-place rotation's src, with keyword arguments
    inverse, dst, src_dtype and dst_dtype), or None: see the module's docstring."""
    signature = inspect.signature(function)
    names = list(signature.parameters)  # for messages: argument names

    def run(args, kwargs, given_tensor):
        tensor = given_tensor
        given = {}  # id(view) -> (view, the caller's tensor)

        def view(name, value):
            if not isinstance(value, tensor):
                return value
            if name in widen and str(value.dtype) == "torch.bfloat16":
                return as_array(name, value.detach().float())
            array = as_array(name, value)
            given[id(array)] = (array, value)
            return array

        args = [view(names[i] if i < len(names) else f"argument {i}", value)
                for i, value in enumerate(args)]
        kwargs = {name: view(name, value) for name, value in kwargs.items()}
        result = function(*args, **kwargs)
        if isinstance(result, np.ndarray):
            mine = given.get(id(result))
            return mine[1] if mine is not None and mine[0] is result else as_tensor(result)
        return result

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        tensor = _tensor_type()
        if tensor is None or not any(isinstance(value, tensor)
                                     for value in (*args, *kwargs.values())):
            return function(*args, **kwargs)
        if not _torch().is_grad_enabled():
            return run(args, kwargs, tensor)
        try:
            bound = signature.bind(*args, **kwargs).arguments
        except TypeError:
            return function(*args, **kwargs)  # the call's own TypeError
        wanting = [name for name, value in bound.items()
                   if isinstance(value, tensor) and value.requires_grad]
        if not wanting:
            return run(args, kwargs, tensor)
        differentiable_call = (differentiable is not None and wanting == [differentiable]
                               and bound.get("dst") is None)
        if not differentiable_call:
            raise _no_grad_error(function, wanting[0], differentiable, bound)
        x = bound[differentiable]
        inverse = bool(bound.get("inverse", False))

        def call(src, backward):
            options = dict(bound)
            options[differentiable] = src
            if backward:  # the inverse rotation, into src's type
                options.update(inverse=not inverse, src_dtype=None, dst_dtype=None)
            positional = [options.pop(name) for name in names[:names.index(differentiable) + 1]]
            return run(positional, options, tensor)

        return _rotation().apply(x, call)

    return wrapper
