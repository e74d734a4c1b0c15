"""Hardware registers read from inside a kernel, and the decorator of device functions.

Registers: ``%clock64``, ``%globaltimer``, ``%smid``.

On a GPU each is one inline-PTX ``mov`` instruction. Numba's CUDA simulator has
none of these registers; there they return the sentinel ``-1``
(:data:`codes.NO_CLOCK`), so the same kernel source runs in both places.
"""

from numba import config, cuda

from .codes import NO_CLOCK

if config.ENABLE_CUDASIM:
    try:
        from numba.cuda.simulator.kernel import _get_kernel_context

        class _RunningKernelCuda:
            """``cuda`` as seen by the simulated kernel that is running now."""

            def __getattr__(self, name):
                return getattr(_get_kernel_context(), name)

        def device(fn):
            """Simulator: a plain function that sees the running kernel's ``cuda``.

            The simulator's own device-function wrapper swaps module globals on
            every call (two locks and a context manager per call); the
            recording helpers are called several times per thread and phase,
            so they reach the running kernel's fake ``cuda`` module directly.
            """
            fn.__globals__["cuda"] = _RunningKernelCuda()
            return fn

    except ImportError:  # another simulator layout: use its own wrapper
        device = cuda.jit(device=True)

    instrumented_kernel = cuda.jit

    def clock64():
        """Simulator fallback: no cycle counter, returns -1."""
        return NO_CLOCK

    def globaltimer():
        """Simulator fallback: no global timer, returns -1."""
        return NO_CLOCK

    def smid():
        """Simulator fallback: no SM, returns -1."""
        return NO_CLOCK

else:
    from llvmlite import ir
    from numba.core import types
    from numba.cuda.extending import intrinsic

    device = cuda.jit(device=True)

    # The recording keeps more values live than the plain kernel (at
    # TILE_WIDTH 32 the uncapped kernel needs 93 registers a thread and
    # 1024 threads cannot launch). Capping at 32, the plain kernel's count,
    # measured fastest on an H200 at Width 4096 (benchmarks/gpu_suite.py).
    MAX_REGISTERS = 32
    instrumented_kernel = cuda.jit(max_registers=MAX_REGISTERS)

    def _special_register(name, bits):
        ptype = "u64" if bits == 64 else "u32"
        constraint = "=l" if bits == 64 else "=r"
        nbtype = types.int64 if bits == 64 else types.int32

        @intrinsic
        def read(typingctx):
            sig = nbtype()

            def codegen(context, builder, signature, args):
                fnty = ir.FunctionType(ir.IntType(bits), [])
                asm = ir.InlineAsm(fnty, f"mov.{ptype} $0, %{name};", constraint, side_effect=True)
                return builder.call(asm, [])

            return sig, codegen

        return read

    clock64 = _special_register("clock64", 64)
    globaltimer = _special_register("globaltimer", 64)
    smid = _special_register("smid", 32)

__all__ = ["clock64", "device", "globaltimer", "instrumented_kernel", "smid"]
