/* onnx_ops_basic.c: part of the ONNX loader (being written). */
