from numba import cuda, float32

TILE_WIDTH = 2


@cuda.jit
def matrixMulKernel(M, N, P, Width):
    Row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    Col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if Row < Width and Col < Width:
        Pvalue = 0.0
        for k in range(Width):
            Pvalue += M[Row * Width + k] * N[k * Width + Col]
        P[Row * Width + Col] = Pvalue
