/* Compiles shmem/lock.c into libopenfam (cgo builds the .c files of capi/). */
#include "../shmem/lock.c"
