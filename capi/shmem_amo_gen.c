/* Compiles shmem/amo_gen.c into libopenfam (cgo builds the .c files of capi/). */
#include "../shmem/amo_gen.c"
