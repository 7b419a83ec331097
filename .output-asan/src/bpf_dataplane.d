.output-asan/src/bpf_dataplane.o: src/bpf_dataplane.c src/bpf_dataplane.h \
 include/vsockmap.h src/log.h .output-asan/vsockmap.skel.h
src/bpf_dataplane.h:
include/vsockmap.h:
src/log.h:
.output-asan/vsockmap.skel.h:
