/* Compiles shmem/core.c into libopenfam (cgo builds the .c files of capi/). */
#include "../shmem/core.c"
