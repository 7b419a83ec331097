.output-asan/src/control_proto.o: src/control_proto.c src/control_proto.h
src/control_proto.h:
