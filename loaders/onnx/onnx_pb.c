/* onnx_pb.c: part of the ONNX loader (being written). */
