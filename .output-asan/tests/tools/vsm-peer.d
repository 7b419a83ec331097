.output-asan/tests/tools/vsm-peer.o: tests/tools/vsm-peer.c
