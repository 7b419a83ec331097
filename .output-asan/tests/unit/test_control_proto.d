.output-asan/tests/unit/test_control_proto.o: \
 tests/unit/test_control_proto.c src/control_proto.h
src/control_proto.h:
