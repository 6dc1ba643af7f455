"""Puzzle 1: tile copy.

Goal: copy Q (N x d, p.dtype) into O, B_r rows at a time: load a row tile, store it, free it.
SRAM: one tile, B_r * d * (bytes an element): there is no room for two.
Bytes: N d e read + N d e written (e = bytes an element): each element moves once each way, the
least any copy can move.
Check: flashsim lab check 1 lab/puzzles/01_copy.py
"""


def kernel(tm, p):
    # p.N, p.d, p.B_r; tm.load(name, row0, col0, rows, cols) -> tile; tm.store(tile, name, row0, col0); tm.free(tile)
    raise NotImplementedError
