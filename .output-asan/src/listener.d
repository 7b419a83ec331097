.output-asan/src/listener.o: src/listener.c src/daemon.h \
 src/bpf_dataplane.h include/vsockmap.h src/config.h src/address.h \
 src/dgram_forwarder.h src/redirect.h src/listener.h src/log.h \
 src/sockopt.h src/util.h
src/daemon.h:
src/bpf_dataplane.h:
include/vsockmap.h:
src/config.h:
src/address.h:
src/dgram_forwarder.h:
src/redirect.h:
src/listener.h:
src/log.h:
src/sockopt.h:
src/util.h:
