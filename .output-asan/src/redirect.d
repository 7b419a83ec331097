.output-asan/src/redirect.o: src/redirect.c src/daemon.h \
 src/bpf_dataplane.h include/vsockmap.h src/config.h src/address.h \
 src/listener.h src/log.h src/redirect.h src/sockopt.h src/util.h
src/daemon.h:
src/bpf_dataplane.h:
include/vsockmap.h:
src/config.h:
src/address.h:
src/listener.h:
src/log.h:
src/redirect.h:
src/sockopt.h:
src/util.h:
