.output-asan/src/address.o: src/address.c src/address.h
src/address.h:
