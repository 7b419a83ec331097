.output-asan/src/util.o: src/util.c src/util.h
src/util.h:
