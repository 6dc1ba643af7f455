"""Reference solution of puzzle 8: FlashAttention-2's backward with recomputation.

Pass 1 (each query block): D_i = rowsum(dO_i * O_i) to HBM; the float32 dQ accumulator zeroed.
Pass 2 (each key block j, K_j, V_j and the dK_j, dV_j accumulators in SRAM; query blocks inner):
  S = scale Q_i K_j^T, P = exp(S - LSE_i), dV_j += P^T dO_i, dP = dO_i V_j^T, dS = P * (dP - D_i),
  dK_j += dS^T Q_i, dQ_i += dS K_j (read, add, write: the float32 accumulator in HBM).
  At the end: dK_j *= scale, dK_j and dV_j stored.
Pass 3 (each query block): dQ_i = scale * accumulator, stored in the storage type.
"""


def kernel(tm, p):
    d = p.d
    for r0 in range(0, p.N, p.B_r):
        r = min(p.B_r, p.N - r0)
        tm.step()
        o, do = tm.load("O", r0, 0, r, d), tm.load("dO", r0, 0, r, d)
        tm.mul(o, do, out=o)
        dd = tm.row_sum(o)
        tm.store(dd, "D", r0, 0)
        z = tm.fill(r, d, 0.0)
        tm.store(z, "dQ_acc", r0, 0)
        for t in (o, do, dd, z):
            tm.free(t)
    for c0 in range(0, p.N, p.B_c):
        c = min(p.B_c, p.N - c0)
        k = v = None
        dk, dv = tm.fill(c, d, 0.0), tm.fill(c, d, 0.0)
        for r0 in range(0, p.N, p.B_r):
            r = min(p.B_r, p.N - r0)
            if p.causal and c0 > r0 + r - 1:
                continue
            tm.step()
            if k is None:
                k, v = tm.load("K", c0, 0, c, d), tm.load("V", c0, 0, c, d)
            q, do = tm.load("Q", r0, 0, r, d), tm.load("dO", r0, 0, r, d)
            lse, dd = tm.load("LSE", r0, 0, r, 1), tm.load("D", r0, 0, r, 1)
            s = tm.matmul(q, k, transpose_b=True, scale=p.scale, tensor="S")
            if p.causal:
                tm.mask_causal(s, r0, c0)
            tm.sub_rows(s, lse, out=s)
            tm.exp(s, out=s, tensor="P")  # P = exp(S - LSE)
            tm.matmul(s, do, transpose_a=True, acc=dv)  # dV_j += P^T dO_i
            dp = tm.matmul(do, v, transpose_b=True, tensor="dP")
            tm.sub_rows(dp, dd, out=dp)
            tm.mul(dp, s, out=dp)  # dS
            tm.matmul(dp, q, transpose_a=True, acc=dk)  # dK_j += dS^T Q_i
            dq = tm.load("dQ_acc", r0, 0, r, d)
            tm.matmul(dp, k, acc=dq)  # dQ_i += dS K_j
            tm.store(dq, "dQ_acc", r0, 0)
            for t in (q, do, lse, dd, s, dp, dq):
                tm.free(t)
        tm.scale(dk, p.scale, out=dk)
        tm.store(dk, "dK", c0, 0)
        tm.store(dv, "dV", c0, 0)
        for t in (dk, dv) + ((k, v) if k is not None else ()):
            tm.free(t)
    for r0 in range(0, p.N, p.B_r):
        r = min(p.B_r, p.N - r0)
        tm.step()
        dq = tm.load("dQ_acc", r0, 0, r, d)
        tm.scale(dq, p.scale, out=dq)
        tm.store(dq, "dQ", r0, 0)
        tm.free(dq)
