/* Compiles shmem/rma_gen.c into libopenfam (cgo builds the .c files of capi/). */
#include "../shmem/rma_gen.c"
