"""Reference solution of puzzle 1: each row tile of Q loaded once and stored once."""


def kernel(tm, p):
    for r0 in range(0, p.N, p.B_r):
        rows = min(p.B_r, p.N - r0)
        t = tm.load("Q", r0, 0, rows, p.d)
        tm.store(t, "O", r0, 0)
        tm.free(t)
