/* onnx_ops_table.c: part of the ONNX loader (being written). */
