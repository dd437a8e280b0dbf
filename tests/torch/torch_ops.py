# SPDX-License-Identifier: MIT
"""torch_ops: ordinary PyTorch on "cuda", each step checked against the CPU
where it computes something: float and half matrix products (cuBLAS,
cuBLASLt), a convolution (cuDNN), a few steps of training, an FFT (cuFFT)
and random numbers (cuRAND's generators inside PyTorch). Prints one line
per step, "STEP: ok (...)" or "STEP: FAILS (...)", and exits 1 when a step
fails; it goes on after a failure so that one run shows them all."""
import sys
import traceback

import torch

failures = 0


def step(name, fn):
    global failures
    try:
        print(f"{name}: ok ({fn()})", flush=True)
    except Exception as e:  # noqa: BLE001 - report every failure and go on
        failures += 1
        last = traceback.format_exception_only(type(e), e)[-1].strip()
        print(f"{name}: FAILS ({last[:300]})", flush=True)


def matmul(dtype, tol):
    def run():
        g = torch.Generator().manual_seed(1)
        a = torch.randn(512, 512, generator=g)
        b = torch.randn(512, 512, generator=g)
        c = (a.to("cuda", dtype) @ b.to("cuda", dtype)).float().cpu()
        err = float((c - a.to(dtype).double() @ b.to(dtype).double()).abs().max())
        assert err < tol, f"worst error {err}"
        return f"512x512 {dtype}, worst error {err:.2g}"
    return run


def conv():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(8, 3, 32, 32, generator=g)
    m = torch.nn.Conv2d(3, 16, 3)
    ref = m(x)
    y = m.cuda()(x.cuda()).cpu()
    err = float((y - ref).abs().max())
    assert err < 1e-2, f"worst error {err}"
    return f"Conv2d 3->16, worst error {err:.2g}"


def train():
    torch.manual_seed(3)
    m = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(),
                            torch.nn.Linear(64, 1)).cuda()
    opt = torch.optim.SGD(m.parameters(), lr=0.05)
    x = torch.randn(256, 64, device="cuda")
    y = x[:, :1] * 2
    first = None
    for _ in range(50):
        loss = torch.nn.functional.mse_loss(m(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        first = first if first is not None else float(loss)
    assert float(loss) < first, f"loss {first} -> {float(loss)}"
    return f"50 steps, loss {first:.3f} -> {float(loss):.3f}"


def fft():
    g = torch.Generator().manual_seed(4)
    x = torch.randn(4096, generator=g, dtype=torch.complex64)
    y = torch.fft.ifft(torch.fft.fft(x.cuda())).cpu()
    err = float((y - x).abs().max())
    assert err < 1e-4, f"worst error {err}"
    return f"4096 there and back, worst error {err:.2g}"


def rand():
    x = torch.rand(1 << 20, device="cuda")
    mean = float(x.mean())
    assert abs(mean - 0.5) < 0.002, f"mean {mean}"
    return f"2^20 uniforms, mean {mean:.4f}"


print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}", flush=True)
step("matmul float", matmul(torch.float32, 1e-2))
step("matmul half", matmul(torch.float16, 1.0))
step("conv", conv)
step("train", train)
step("fft", fft)
step("rand", rand)
torch.cuda.synchronize()
sys.exit(1 if failures else 0)
