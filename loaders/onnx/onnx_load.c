/* onnx_load.c: part of the ONNX loader (being written). */
