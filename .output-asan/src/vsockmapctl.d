.output-asan/src/vsockmapctl.o: src/vsockmapctl.c src/address.h \
 src/config.h src/control_proto.h
src/address.h:
src/config.h:
src/control_proto.h:
