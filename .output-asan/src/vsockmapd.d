.output-asan/src/vsockmapd.o: src/vsockmapd.c src/control_proto.h \
 src/daemon.h src/bpf_dataplane.h include/vsockmap.h src/config.h \
 src/address.h src/log.h
src/control_proto.h:
src/daemon.h:
src/bpf_dataplane.h:
include/vsockmap.h:
src/config.h:
src/address.h:
src/log.h:
