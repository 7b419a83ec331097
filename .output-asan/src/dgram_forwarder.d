.output-asan/src/dgram_forwarder.o: src/dgram_forwarder.c \
 src/bpf_dataplane.h include/vsockmap.h src/daemon.h src/config.h \
 src/address.h src/dgram_forwarder.h src/redirect.h src/listener.h \
 src/log.h src/sockopt.h src/util.h
src/bpf_dataplane.h:
include/vsockmap.h:
src/daemon.h:
src/config.h:
src/address.h:
src/dgram_forwarder.h:
src/redirect.h:
src/listener.h:
src/log.h:
src/sockopt.h:
src/util.h:
