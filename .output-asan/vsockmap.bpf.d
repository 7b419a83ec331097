.output-asan/vsockmap.bpf.o: bpf/vsockmap.bpf.c .output-asan/vmlinux.h \
  include/vsockmap.h

.output-asan/vmlinux.h:

include/vsockmap.h:
