/* The segment map: one byte per 2 MiB slot of the address space, set while a segment header
 * starts there (internal.h has the invariant and the readers).
 *
 * Why a file of its own, last in the link: the map is 64 MiB of .bss that a process touches a
 * page or two of, and the linker lays .bss out in object order.  Defined before other files'
 * small globals, it put those on a page of their own past its end: one more resident page in
 * every process. */
#include "internal.h"

MTH_HIDDEN uint8_t mth_segmap[MTH_SEGMAP_SLOTS];
