"""float64_everywhere(torch): for the duration of a with-block, every float32 request torch
sees is a float64 one (Tensor.float, the dtype= of Tensor.to, torch.arange, torch.tensor,
torch.zeros, torch.ones, and the default dtype), so that HuggingFace's float32 rotary code
computes in float64 (its Python scalar math is double already). Shared by
tests/data/hf_rope_golden.py and python/tests/test_hf_config.py."""

import contextlib
import functools

_FACTORIES = ("arange", "tensor", "zeros", "ones")


@contextlib.contextmanager
def float64_everywhere(torch):
    def f64(dtype):
        return torch.float64 if dtype == torch.float32 else dtype

    saved = {name: getattr(torch, name) for name in _FACTORIES}
    saved_float, saved_to = torch.Tensor.float, torch.Tensor.to
    default_dtype = torch.get_default_dtype()

    def tensor_to(self, *args, **kwargs):
        args = tuple(f64(a) if isinstance(a, torch.dtype) else a for a in args)
        if "dtype" in kwargs:
            kwargs["dtype"] = f64(kwargs["dtype"])
        return saved_to(self, *args, **kwargs)

    def with_dtype(factory):
        @functools.wraps(factory)
        def call(*args, **kwargs):
            if "dtype" in kwargs:
                kwargs["dtype"] = f64(kwargs["dtype"])
            return factory(*args, **kwargs)
        return call

    torch.Tensor.float = lambda self, *a, **k: self.double(*a, **k)
    torch.Tensor.to = tensor_to
    for name in _FACTORIES:
        setattr(torch, name, with_dtype(saved[name]))
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.Tensor.float, torch.Tensor.to = saved_float, saved_to
        for name in _FACTORIES:
            setattr(torch, name, saved[name])
        torch.set_default_dtype(default_dtype)
