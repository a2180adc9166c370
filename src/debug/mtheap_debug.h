/* The heap-debugging mode's public API (libmtheap-debug.so).  To be folded into mtheap.h.
 *
 * Run a program with the debug library:   LD_PRELOAD=libmtheap-debug.so ./app
 * and choose the checks with MTHEAP_DEBUG (docs/DEBUG.md): e.g. MTHEAP_DEBUG=full,continue
 */
#ifndef MTHEAP_DEBUG_H
#define MTHEAP_DEBUG_H

#ifdef __cplusplus
extern "C" {
#endif

/* Check every live block's header and redzones and every quarantined block's free pattern
 * now.  Errors are reported on stderr as at free(); the process aborts at the first one
 * unless MTHEAP_DEBUG contains "continue".  Returns the number of errors found (0 when the
 * heap is clean, or when the library runs without headers, e.g. MTHEAP_DEBUG=sample=N).
 * Call it through a weak reference to keep a program runnable without the debug library. */
__attribute__((visibility("default"))) int mtheap_check_heap(void);

#ifdef __cplusplus
}
#endif
#endif
