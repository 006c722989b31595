/* onnx_const.c: part of the ONNX loader (being written). */
