.output-asan/src/config.o: src/config.c src/config.h src/address.h
src/config.h:
src/address.h:
