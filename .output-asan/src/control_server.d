.output-asan/src/control_server.o: src/control_server.c \
 src/control_proto.h src/control_server.h src/log.h
src/control_proto.h:
src/control_server.h:
src/log.h:
