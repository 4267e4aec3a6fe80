/* Compiles shmem/team.c into libopenfam (cgo builds the .c files of capi/). */
#include "../shmem/team.c"
