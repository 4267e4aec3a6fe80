/* Compiles shmem/heap.c into libopenfam (cgo builds the .c files of capi/). */
#include "../shmem/heap.c"
