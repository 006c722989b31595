/* onnx_tensor.c: part of the ONNX loader (being written). */
