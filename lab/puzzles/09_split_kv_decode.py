"""Puzzle 9: split-KV decoding with its merge.

Goal: O (p.R x d) for a few query rows over N keys, the keys cut into p.splits equal parts (as a
decode kernel does to use more SMs). Each split runs the FA2 loop over its keys and writes its
normalised partial output and log-sum-exp to scratch O_part (row sp*R) and LSE_part. The merge
then reads them back: LSE = log sum_s exp(LSE_s), O = sum_s exp(LSE_s - LSE) O_s.
SRAM: Q, K_j, V_j, a float32 accumulator, an R x B_c score tile and six row vectors.
Bytes: K and V once; Q once per split; the partials (float32) written once and read once; O once.
"""


def kernel(tm, p):
    raise NotImplementedError
