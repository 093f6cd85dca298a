/* cuDNN: a 3 x 3 convolution of a 8 x 16 x 32 x 32 tensor per round, with the work area the
 * library asks for allocated beside it. */
#include <cudnn.h>

#include "libcheck.h"

int main(void)
{
    enum { B = 8, C = 16, H = 32, W = 32, K = 16 };
    cudnnHandle_t h;
    LIBCHECK(cudnnCreate(&h));
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    LIBCHECK(cudnnCreateTensorDescriptor(&xd));
    LIBCHECK(cudnnCreateTensorDescriptor(&yd));
    LIBCHECK(cudnnCreateFilterDescriptor(&wd));
    LIBCHECK(cudnnCreateConvolutionDescriptor(&cd));
    LIBCHECK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, B, C, H, W));
    LIBCHECK(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, K, C, 3, 3));
    LIBCHECK(cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                             CUDNN_DATA_FLOAT));
    LIBCHECK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, B, K, H, W));
    const cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    size_t ws_bytes = 0;
    LIBCHECK(cudnnGetConvolutionForwardWorkspaceSize(h, xd, wd, cd, yd, algo, &ws_bytes));
    double total = 0;
    for (int r = 0; r < ROUNDS; r++) {
        float *x, *w, *y;
        void *ws = NULL;
        LIBCHECK(cudaMalloc((void **)&x, (size_t)B * C * H * W * sizeof(float)));
        LIBCHECK(cudaMalloc((void **)&w, (size_t)K * C * 9 * sizeof(float)));
        LIBCHECK(cudaMalloc((void **)&y, (size_t)B * K * H * W * sizeof(float)));
        if (ws_bytes > 0)
            LIBCHECK(cudaMalloc(&ws, ws_bytes));
        device_fill(x, (size_t)B * C * H * W, r);
        device_fill(w, (size_t)K * C * 9, r + 1);
        const float one = 1.0f, zero = 0.0f;
        LIBCHECK(cudnnConvolutionForward(h, &one, xd, x, wd, w, cd, algo, ws, ws_bytes, &zero,
                                         yd, y));
        total += device_sum(y, (size_t)B * K * H * W);
        LIBCHECK(cudaFree(x));
        LIBCHECK(cudaFree(w));
        LIBCHECK(cudaFree(y));
        if (ws != NULL)
            LIBCHECK(cudaFree(ws));
    }
    LIBCHECK(cudnnDestroy(h));
    printf("cudnn checksum %.17g\n", total);
    return 0;
}
