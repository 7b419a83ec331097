.output-asan/tests/unit/test_address.o: tests/unit/test_address.c \
 src/address.h
src/address.h:
