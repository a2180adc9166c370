/* Links early_lib (see there): its locks and thread predate main and maybe plockstat. */
#include <stdio.h>
void early_lib_done(void);
int main(void) {
  early_lib_done();
  puts("early done");
  return 0;
}
