.output-asan/tests/unit/test_config.o: tests/unit/test_config.c \
 src/config.h src/address.h
src/config.h:
src/address.h:
