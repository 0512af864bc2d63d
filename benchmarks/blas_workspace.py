"""The cuBLAS workspaces a training step holds on a GPU, measured apart from everything else.

perfmodel.memory counts STEP_BLAS_HANDLES cuBLAS workspaces per GPU (the forward's, on the Python thread's
handle, and backward's, on the autograd engine's device thread), each of the size PyTorch chooses for the
GPU's compute capability. This script checks that in a fresh process: torch.cuda.memory_allocated before and
after the first matmul in forward, and after the first backward, with the tensors themselves subtracted, and
prints both steps beside the model's figure. Needs a CUDA GPU; prints one line and exits 0 without one.

    python benchmarks/blas_workspace.py
"""

from __future__ import annotations

import json


def main() -> None:
    import torch

    if not torch.cuda.is_available():
        print("blas_workspace: no CUDA GPU here; nothing to measure")
        return
    from perfmodel.memory import CUBLAS_WORKSPACE, CUBLAS_WORKSPACE_DEFAULT, STEP_BLAS_HANDLES

    major, minor = torch.cuda.get_device_capability()
    x = torch.randn(64, 64, device="cuda", requires_grad=True)
    w = torch.randn(64, 64, device="cuda", requires_grad=True)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    y = x @ w  # the first cuBLAS call of this thread: its workspace
    torch.cuda.synchronize()
    forward = torch.cuda.memory_allocated() - base - y.numel() * y.element_size()
    y.sum().backward()  # runs on autograd's device thread: its own handle, its own workspace
    torch.cuda.synchronize()
    grads = (x.grad.numel() + w.grad.numel()) * 4
    after = torch.cuda.memory_allocated() - base - y.numel() * y.element_size() - grads
    per = CUBLAS_WORKSPACE.get(major, CUBLAS_WORKSPACE_DEFAULT)
    print(json.dumps({"gpu": torch.cuda.get_device_name(), "capability": f"{major}.{minor}",
                      "torch": torch.__version__, "forward_workspace_bytes": forward,
                      "forward_and_backward_workspace_bytes": after,
                      "model_bytes": STEP_BLAS_HANDLES * per, "model_per_handle_bytes": per}))


if __name__ == "__main__":
    main()
