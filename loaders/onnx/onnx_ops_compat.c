/* onnx_ops_compat.c: part of the ONNX loader (being written). */
