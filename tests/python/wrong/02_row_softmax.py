"""Reference solution of puzzle 2: max first, then exp(s - max), then the sum, then divide."""


def kernel(tm, p):
    for r in range(p.R):
        s = tm.load("S", r, 0, 1, p.N)
        m = tm.row_max(s)
        tm.exp(s, out=s)  # planted: exp before the max is subtracted
        l = tm.row_sum(s)
        tm.div_rows(s, l, out=s)
        tm.store(s, "P", r, 0)
        for t in (s, m, l):
            tm.free(t)
