"""Reference solution of puzzle 5: Algorithm 1 (FlashAttention-1), K/V blocks outer.

O (float32), l and m live in HBM; every inner step reads them and writes them back, O kept
normalised: O_new = (l e^(m - m_new) O + e^(mt - m_new) P V) / l_new.
"""


def kernel(tm, p):
    for r0 in range(0, p.N, p.B_r):  # line 2: O = 0, l = 0, m = -inf in HBM
        r = min(p.B_r, p.N - r0)
        for name, rows, cols, v in (("O", r, p.d, 0.0), ("l", r, 1, 0.0), ("m", r, 1, float("-inf"))):
            t = tm.fill(rows, cols, v)
            tm.store(t, name, r0, 0)
            tm.free(t)
    for c0 in range(0, p.N, p.B_c):
        c = min(p.B_c, p.N - c0)
        k = v = None
        for r0 in range(0, p.N, p.B_r):
            r = min(p.B_r, p.N - r0)
            if p.causal and c0 > r0 + r - 1:
                continue
            tm.step()
            if k is None:
                k, v = tm.load("K", c0, 0, c, p.d), tm.load("V", c0, 0, c, p.d)
            q = tm.load("Q", r0, 0, r, p.d)
            o = tm.load("O", r0, 0, r, p.d)
            l = tm.load("l", r0, 0, r, 1)
            m = tm.load("m", r0, 0, r, 1)
            s = tm.matmul(q, k, transpose_b=True, scale=p.scale, tensor="S")
            if p.causal:
                tm.mask_causal(s, r0, c0)
            mt = tm.row_max(s)
            tm.exp(s, shift=mt, out=s)  # P~ = exp(S - mt)
            lt = tm.row_sum(s)
            m_new = tm.maximum(m, mt)
            a_old = tm.exp(m, shift=m_new)
            a_new = tm.exp(mt, shift=m_new)
            tm.mul(a_old, l, out=a_old)  # l e^(m - m_new)
            tm.mul(a_new, lt, out=lt)  # e^(mt - m_new) lt
            l_new = tm.add(a_old, lt)
            tm.div(a_old, l_new, out=a_old)  # keep = l e^(m - m_new) / l_new
            tm.div(a_new, l_new, out=a_new)  # e^(mt - m_new) / l_new
            tm.mul_rows(o, a_old, out=o)
            pv = tm.matmul(s, v)
            tm.mul_rows(pv, a_new, out=pv)
            tm.add(o, pv, out=o)
            tm.store(o, "O", r0, 0)
            tm.store(l_new, "l", r0, 0)
            tm.store(m_new, "m", r0, 0)
            for t in (q, o, l, m, s, mt, lt, m_new, a_old, a_new, l_new, pv):
                tm.free(t)
        if k is not None:
            tm.free(k)
            tm.free(v)
