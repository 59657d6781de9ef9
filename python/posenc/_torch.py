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
"""

import functools
import inspect
import sys

import numpy as np

# the torch dtypes taken (bfloat16 as uint16 bits: NumPy has no bfloat16)
_TAKEN = frozenset({"float32", "float16", "float64", "int64", "int32", "int16", "int8", "uint8",
                    "bool", "bfloat16"})


def _tensor_type():
    torch = sys.modules.get("torch")
    return None if torch is None else getattr(torch, "Tensor", None)


def as_array(name, tensor):
    """A NumPy view of a CPU tensor's memory (strides kept; bfloat16 as uint16 bits)."""
    if tensor.device.type != "cpu":
        raise TypeError(f"{name} is a tensor on {tensor.device}; posenc runs on the CPU: pass a "
                        "CPU tensor")
    kind = str(tensor.dtype).replace("torch.", "")
    if kind not in _TAKEN:
        raise TypeError(f"{name} has dtype {tensor.dtype}; posenc takes float32, bfloat16 and "
                        "float16 tensors (integer tensors for positions, bool for masks)")
    tensor = tensor.detach()  # the same memory; posenc's writes are not recorded by autograd
    if kind == "bfloat16":
        torch = sys.modules["torch"]
        return tensor.view(torch.int16).numpy().view(np.uint16)
    return tensor.numpy()


def as_tensor(array):
    """A tensor sharing a new array's memory: uint16 (posenc's bfloat16 storage) becomes
    bfloat16."""
    torch = sys.modules["torch"]
    if array.dtype == np.uint16:
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def accepts_tensors(function, widen=()):
    """Wraps a posenc function so that it takes torch CPU tensors wherever it takes NumPy
    arrays, and returns tensors when it was given any (see the module's docstring). widen:
    names of arguments read as float32 values, whose bfloat16 tensors are widened to float32
    (a copy, exact) rather than viewed as uint16 bits (softmax's mask)."""
    names = list(inspect.signature(function).parameters)  # for messages: argument names

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        tensor = _tensor_type()
        if tensor is None or not any(isinstance(value, tensor)
                                     for value in (*args, *kwargs.values())):
            return function(*args, **kwargs)
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

    return wrapper
