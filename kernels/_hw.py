"""Hardware registers read from inside a kernel, and the decorator of device functions.

vizmm's instrumenter (its rewritten kernels' device functions) reads them.

Registers: ``%clock64``, ``%globaltimer``, ``%smid``.

On a GPU each is one inline-PTX ``mov`` instruction, marked as having side
effects so that the compiler neither merges nor moves two reads of a clock.
Each compiler takes it its own way: numba-cuda through an ``intrinsic`` whose
code generator writes LLVM IR (llvmlite), numba-cuda-mlir through an
``intrinsic`` whose code generator emits the MLIR ``llvm.inline_asm``
operation (its ``cuda.inline_ptx`` turns every ``%`` into an operand marker,
so a register name cannot be written with it). Numba's CUDA simulator has
none of these registers; there they return the sentinel ``-1``
(:data:`codes.NO_CLOCK`), so the same kernel source runs in all three
places (:mod:`._target` says which one this process uses).
"""

from ._target import MLIR, NAME, NONE, SIMULATOR, cuda
from .codes import NO_CLOCK

if NAME == NONE:

    def device(fn):
        """No compiler: the function kept as written."""
        return fn

    def clock64():
        """No compiler: no cycle counter, returns -1."""
        return NO_CLOCK

    def globaltimer():
        """No compiler: no global timer, returns -1."""
        return NO_CLOCK

    def smid():
        """No compiler: no SM, returns -1."""
        return NO_CLOCK

elif NAME == SIMULATOR:
    try:
        from numba.cuda.simulator.kernel import _get_kernel_context

        class _RunningKernelCuda:
            """``cuda`` as seen by the simulated kernel that is running now."""

            @property
            def atomic(self):
                """The running kernel's atomics (looked up without ``__getattr__``'s miss)."""
                return _get_kernel_context().atomic

            @property
            def syncthreads(self):
                """The running kernel's barrier (looked up without ``__getattr__``'s miss)."""
                return _get_kernel_context().syncthreads

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

    def clock64():
        """Simulator fallback: no cycle counter, returns -1."""
        return NO_CLOCK

    def globaltimer():
        """Simulator fallback: no global timer, returns -1."""
        return NO_CLOCK

    def smid():
        """Simulator fallback: no SM, returns -1."""
        return NO_CLOCK

elif NAME == MLIR:
    from numba_cuda_mlir.extending import intrinsic
    from numba_cuda_mlir.numba_cuda import types

    device = cuda.jit(device=True)

    def _special_register(name, bits):
        ptype = "u64" if bits == 64 else "u32"
        constraint = "=l" if bits == 64 else "=r"
        nbtype = types.int64 if bits == 64 else types.int32

        @intrinsic
        def read(typingctx):
            def codegen(builder, target, args, kwargs):
                from numba_cuda_mlir._mlir.dialects import llvm
                from numba_cuda_mlir._mlir.ir import IntegerType

                value = llvm.inline_asm(
                    IntegerType.get_signless(bits),
                    [],
                    f"mov.{ptype} $0, %{name};",
                    constraint,
                    has_side_effects=True,
                )
                builder.store_var(target, value)

            return nbtype(), codegen

        return read

    clock64 = _special_register("clock64", 64)
    globaltimer = _special_register("globaltimer", 64)
    smid = _special_register("smid", 32)

else:
    from llvmlite import ir
    from numba.core import types
    from numba.cuda.extending import intrinsic

    device = cuda.jit(device=True)

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

__all__ = [
    "clock64",
    "device",
    "globaltimer",
    "smid",
]
