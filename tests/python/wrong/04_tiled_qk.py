"""Reference solution of puzzle 4: Q_i loaded once per row of tiles, K_j streamed."""


def kernel(tm, p):
    for r0 in range(0, p.N, p.B_r):
        rows = min(p.B_r, p.N - r0)
        for c0 in range(0, p.N, p.B_c):
            q = tm.load("Q", r0, 0, rows, p.d)  # planted: Q_i read again for every tile
            k = tm.load("K", c0, 0, min(p.B_c, p.N - c0), p.d)
            s = tm.matmul(q, k, transpose_b=True, scale=p.scale, tensor="S")
            tm.store(s, "S", r0, c0)
            tm.free(s)
            tm.free(k)
            tm.free(q)
