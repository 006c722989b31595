/* onnx_ops_shape.c: part of the ONNX loader (being written). */
