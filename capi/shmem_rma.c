/* Compiles shmem/rma.c into libopenfam (cgo builds the .c files of capi/). */
#include "../shmem/rma.c"
