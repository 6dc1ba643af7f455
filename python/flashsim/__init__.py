"""flashsim: a simulator of FlashAttention's memory traffic, from Python.

The simulator (C++, sim/) counts every byte an attention algorithm moves between HBM and SRAM by
walking its tile loops. This package gives:

  TileMachine             the lab's tile machine: write a kernel as loads, stores and tile
                          arithmetic; it counts bytes and FLOPs as the simulator's walkers do,
                          enforces an SRAM capacity and records a trace; save_trace(FILE)
                          writes it for `flashsim-app --trace FILE` to replay
  attend(q, k, v, ...)    your Q, K, V through a simulated algorithm: O (and dQ, dK, dV with
                          dout=) as NumPy arrays, with the run's counts
  fit(...)                the longest N one attention layer fits in a GPU's memory
  decode(...)             split-KV decoding's bytes and time, as `flashsim decode` counts them
  softmax(scores, block)  the online softmax of one row, block by block (running max, sum, rescale)
  simulate(...)           run the built-in standard / flash1 / flash2 algorithms (dict of counts)
  compare(...)            simulate several algorithms at one shape (dict of dicts)
  attention_reference     float64 attention of one head (NumPy arrays)
  attention_backward_reference   its gradients
  round_to(x, dtype)      round to fp16 / bf16 / fp32 as the simulator stores values
  machines()              the GPU presets
  flashsim.lab            the puzzles: `python3 -m flashsim.lab --list`, `... check N [FILE]`
"""
try:  # the C++ extension, built into build/python
    from _flashsim import (  # noqa: F401
        Error,
        TileMachine,
        attend,
        attention_backward_reference,
        attention_reference,
        decode,
        fit,
        machines,
        round_to,
        simulate,
        softmax,
    )
except ImportError as e:
    raise ImportError("the flashsim C++ extension (_flashsim) is missing or stale (%s): build it with scripts/test.sh "
                      "or cmake --build build --target _flashsim (needs pybind11-dev, python3-dev)" % e) from e


def compare(seq, head_dim, algos=("standard", "flash1", "flash2"), **kw):
    """simulate() for each algorithm at one shape: {algo: result dict}. Keyword arguments as simulate's."""
    return {a: simulate(seq, head_dim, algo=a, **kw) for a in algos}
