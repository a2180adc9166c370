/* mcb bug 1 in miniature: the buffer is sized with sizeof(pointer) (8 bytes), then a longer key
 * is copied into it.  Expected: heap-buffer-overflow, allocated in make_key_buffer. */
#include <stdlib.h>
#include <string.h>

static char *make_key_buffer(void) {
  char *buff = malloc(sizeof(buff)); /* BUG: size of the pointer, not of the key */
  return buff;
}

static void build_key(char *buff, int key) {
  strcpy(buff, "key:000");
  buff[7] = (char)('0' + key % 10);
  strcpy(buff + 8, "-suffix"); /* writes past the 8-byte block */
}

int main(void) {
  char *k = make_key_buffer();
  build_key(k, 7);
  free(k);
  return 0;
}
