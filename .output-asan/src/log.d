.output-asan/src/log.o: src/log.c src/log.h
src/log.h:
