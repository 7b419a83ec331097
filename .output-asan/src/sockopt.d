.output-asan/src/sockopt.o: src/sockopt.c src/sockopt.h src/address.h \
 src/util.h
src/sockopt.h:
src/address.h:
src/util.h:
