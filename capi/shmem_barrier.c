/* Compiles shmem/barrier.c into libopenfam (cgo builds the .c files of capi/). */
#include "../shmem/barrier.c"
