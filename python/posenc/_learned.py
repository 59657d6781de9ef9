"""Learned position embeddings added into activations."""

from . import _lib
from ._lib import lib
from ._core import _address, _check, _data, _pointer, _positions


def learned_add(table, x, *, positions=None, start_pos=0):
    """Adds learned position embeddings in place, x[t] += table[position of t]:
    posenc_learned_add_f32. Returns None.

    table: a float32 [max_pos, d] view (read only; rows may be strided). x: a writeable
    float32 [L, d] view not overlapping the table. positions: L integer positions in
    [0, max_pos), or None for start_pos + t (seed 003's apply_learned is start_pos=0); every
    position is checked before anything is written.
    """
    _, (table_stride, _) = _data("table", table, 2, False, types=(_lib.DTYPE_F32,))
    _, (x_stride, _) = _data("x", x, 2, True, types=(_lib.DTYPE_F32,))
    if x.shape[1] != table.shape[1]:
        raise ValueError(f"x {x.shape} and table {table.shape} must have the same width")
    positions, start_pos = _positions(positions, x.shape[0], start_pos)
    _check(lib.posenc_learned_add_f32(_address(table), table.shape[0], table_stride,
                                      table.shape[1], x.shape[0], _pointer(positions),
                                      start_pos, _address(x), x_stride),
           "posenc_learned_add_f32")
