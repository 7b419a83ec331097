.output-asan/src/daemon.o: src/daemon.c .output-asan/bpf_object_id.h \
 src/control_server.h src/daemon.h src/bpf_dataplane.h include/vsockmap.h \
 src/config.h src/address.h src/dgram_forwarder.h src/redirect.h \
 src/listener.h src/log.h src/util.h
.output-asan/bpf_object_id.h:
src/control_server.h:
src/daemon.h:
src/bpf_dataplane.h:
include/vsockmap.h:
src/config.h:
src/address.h:
src/dgram_forwarder.h:
src/redirect.h:
src/listener.h:
src/log.h:
src/util.h:
