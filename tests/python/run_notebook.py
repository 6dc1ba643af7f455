"""Execute a notebook headless (nbclient, as Debian packages it) and fail on any cell's error.
Exits 77 (skipped) when nbformat, nbclient, the Python kernel or the flashsim module is missing."""
import os
import sys

os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # quiet the kernel's debugger notes
os.environ.pop("MPLBACKEND", None)  # the kernel's inline backend makes the PNGs counted below

try:
    import nbclient
    import nbformat
    import flashsim  # noqa: F401  (the notebook's first cell needs it)
    from jupyter_client.kernelspec import KernelSpecManager

    if "python3" not in KernelSpecManager().find_kernel_specs():
        raise ImportError("no python3 Jupyter kernel (Debian: python3-ipykernel)")
except ImportError as e:
    print("skipped: %s" % e)
    sys.exit(77)

nb = nbformat.read(sys.argv[1], as_version=4)
nbclient.NotebookClient(nb, timeout=300, kernel_name="python3").execute()
plots = sum(1 for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if "image/png" in o.get("data", {}))
print("ran %d cells, %d plots" % (len(nb.cells), plots))
sys.exit(0 if plots >= 1 else 1)
