/* onnx_attrs.c: part of the ONNX loader (being written). */
