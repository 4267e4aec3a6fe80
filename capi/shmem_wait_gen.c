/* Compiles shmem/wait_gen.c into libopenfam (cgo builds the .c files of capi/). */
#include "../shmem/wait_gen.c"
